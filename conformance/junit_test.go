package conformance

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

// TestWriteJUnit renders a report of each kind of result and reads it
// back as a CI system does: a failure, a skip, and every reason kept.
func TestWriteJUnit(t *testing.T) {
	r := &Report{Results: []Result{
		{Name: "passes", Passed: true, Reason: "fine", Duration: 1500 * time.Millisecond},
		{Name: "fails", Reason: "broken <badly> & \"quoted\"", Duration: time.Second},
		{Name: "skips", Passed: true, Skipped: true, Reason: "no pod network"},
		{Name: "informs", Passed: true, Informational: true, Reason: "closed the connection"},
	}}
	var b bytes.Buffer
	if err := r.WriteJUnit(&b, "nri check runtime"); err != nil {
		t.Fatal(err)
	}
	var got junitSuite
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Failures != 1 || got.Skipped != 1 || got.Time != "2.500" || got.Name != "nri check runtime" {
		t.Errorf("suite %+v, want 4 tests, 1 failure, 1 skipped, 2.500 s", got)
	}
	for i, c := range got.Cases {
		want := r.Results[i]
		if c.Name != want.Name || c.SystemOut != want.Reason {
			t.Errorf("case %d: %q %q, want %q %q", i, c.Name, c.SystemOut, want.Name, want.Reason)
		}
		if (c.Failure != nil) != (want.Name == "fails") || (c.Skipped != nil) != want.Skipped {
			t.Errorf("case %s: failure %v skipped %v", c.Name, c.Failure, c.Skipped)
		}
	}
	if f := got.Cases[1].Failure; f == nil || f.Message != r.Results[1].Reason {
		t.Errorf("failure %+v, want the reason as the message", f)
	}
	if !strings.HasPrefix(b.String(), xml.Header) {
		t.Error("no XML header")
	}
}
