package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that parsing arbitrary bytes never panics, and that
// every error it returns is an *Error for the file that carries a
// position (a line) or names the field at fault, so a user can find the
// mistake.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	for _, seed := range []string{
		"", "\n", "---\n", "- a\n", "name: x\n", "pods: [\n", "pods: {name: p}\nsteps: []\n",
		"name: a\nname: b\nsteps: []\n", "pods: [{name: p}]\nsteps:\n  - {runPod: p, stopPod: p}\n",
		"pods: [{name: p}]\ncontainers: [{name: c, pod: p, resources: {memoryLimit: 1Qi}}]\nsteps: [{runPod: p}]\n",
		"plugins:\n  - name: x\n    index: 7\nsteps: []\n", "pods: [{name: p}]\nsteps: [{runPod: p}]\n---\nname: x\n",
		"steps:\n  - runPod: &a nope\n  - stopPod: *a\n", "pods:\n  - name: p\n   labels: {}\n", "\t- x\n", "a: [b\n",
	} {
		f.Add([]byte(seed))
	}
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	for _, path := range examples {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err == nil {
			if s == nil {
				t.Fatal("Parse returned neither a scenario nor an error")
			}
			return
		}
		for _, e := range leafErrors(err) {
			var se *Error
			if !errors.As(e, &se) || se.File != "f.yaml" {
				t.Fatalf("error %v (%T) is not a *scenario.Error for f.yaml", e, e)
			}
			if se.Line <= 0 && se.Msg != "empty scenario" {
				t.Fatalf("error %q has no line", se.Error())
			}
		}
	})
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// TestFirstLineSyntaxError guards the case FuzzParse found: yaml.v3 names
// no line for a syntax error on the first line.
func TestFirstLineSyntaxError(t *testing.T) {
	_, err := Parse("s.yaml", []byte("\t- x\n"))
	var se *Error
	if !errors.As(err, &se) || se.Line != 1 {
		t.Fatalf("error %v, want a *scenario.Error at line 1", err)
	}
}
