package cri

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table of checks in docs/cli.md from Checks")

// The table of checks in docs/cli.md lies between these markers.
const (
	docsFile        = "../../docs/cli.md"
	docsBeginMarker = "<!-- BEGIN GENERATED CHECKS: go test ./conformance/cri -run TestChecksDocumented -update -->"
	docsEndMarker   = "<!-- END GENERATED CHECKS -->"
)

// docsTable renders the checks as docs/cli.md shows them.
func docsTable() string {
	var b strings.Builder
	b.WriteString("| check | needs | passes when |\n| --- | --- | --- |\n")
	for _, c := range Checks() {
		needs := "—"
		if len(c.Needs) > 0 {
			var n []string
			for _, x := range c.Needs {
				n = append(n, string(x))
			}
			needs = strings.Join(n, ", ")
		}
		if c.Serial {
			needs += " (runs alone)"
		}
		fmt.Fprintf(&b, "| `%s`: %s | %s | %s |\n", c.ID, c.Name, needs, strings.ReplaceAll(c.Decides, "|", `\|`))
	}
	return b.String()
}

// TestChecksDocumented: docs/cli.md's table of the checks is the one
// Checks gives (-update rewrites it).
func TestChecksDocumented(t *testing.T) {
	b, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := strings.Index(doc, docsBeginMarker), strings.Index(doc, docsEndMarker)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers %q and %q", docsFile, docsBeginMarker, docsEndMarker)
	}
	want := docsBeginMarker + "\n" + docsTable() + docsEndMarker
	got := doc[begin : end+len(docsEndMarker)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(docsFile, []byte(doc[:begin]+want+doc[end+len(docsEndMarker):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the table of checks is not Checks' (go test ./conformance/cri -run TestChecksDocumented -update)", docsFile)
}
