package policy

import (
	"os"
	"strings"
	"testing"
)

// TestDocumentedSamplePolicy checks that the sample plugins' policy in
// docs/policy.md is testdata/samples.yaml, which the tests parse and
// check.
func TestDocumentedSamplePolicy(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\n# A policy for nrikit's sample plugins")
	block, _, _ = strings.Cut(block, "```\n")
	if !ok || "# A policy for nrikit's sample plugins"+block != string(want) {
		t.Errorf("docs/policy.md's sample policy differs from testdata/samples.yaml:\n%s", block)
	}
}
