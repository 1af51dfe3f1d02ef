package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
)

// junitSuite is the JUnit XML that CI systems read: one test suite, a
// test case per result.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit renders the report as a JUnit XML test suite called suite:
// a failed check is a test case with a failure, a skipped one a skipped
// test case, and every reason (for an informational result, what the
// peer did) the case's output.
func (r *Report) WriteJUnit(w io.Writer, suite string) error {
	s := junitSuite{Name: suite}
	var total float64
	for _, res := range r.Results {
		secs := res.Duration.Seconds()
		total += secs
		c := junitCase{Name: res.Name, ClassName: suite, Time: fmt.Sprintf("%.3f", secs), SystemOut: res.Reason}
		switch {
		case res.Skipped:
			c.Skipped = &junitMessage{Message: res.Reason}
			s.Skipped++
		case !res.Passed:
			c.Failure = &junitMessage{Message: res.Reason, Text: res.Reason}
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests, s.Time = len(s.Cases), fmt.Sprintf("%.3f", total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}
