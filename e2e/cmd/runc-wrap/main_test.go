package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreates(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		bundle string
		create bool
	}{
		{[]string{"--root", "/r", "create", "--bundle", "/b", "id"}, "/b", true},
		{[]string{"create", "-b", "/b", "id"}, "/b", true},
		{[]string{"--root=/r", "run", "--bundle=/b", "id"}, "/b", true},
		{[]string{"create", "id"}, ".", true},
		{[]string{"--root", "/r", "--log", "create", "start", "id"}, "", false},
		{[]string{"--debug", "exec", "id", "create"}, "", false},
	} {
		bundle, create := creates(tc.args)
		if bundle != tc.bundle || create != tc.create {
			t.Errorf("creates(%q) = %q, %v; want %q, %v", tc.args, bundle, create, tc.bundle, tc.create)
		}
	}
}

func TestClamp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, tc := range []struct{ in, want string }{
		{`{"process":{"oomScoreAdj":-998,"args":["/pause"]},"linux":{"resources":{"memory":{"limit":9223372036854775807}}}}`,
			`{"linux":{"resources":{"memory":{"limit":9223372036854775807}}},"process":{"args":["/pause"],"oomScoreAdj":0}}`},
		{`{"process":{"oomScoreAdj":500}}`, `{"process":{"oomScoreAdj":500}}`},
		{`{"process":{}}`, `{"process":{}}`},
		{`{}`, `{}`},
	} {
		if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := clamp(path); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if got := strings.TrimSpace(string(b)); got != tc.want {
			t.Errorf("clamp(%s) wrote %s, want %s", tc.in, got, tc.want)
		}
	}
	if err := os.WriteFile(path, []byte(`{"process":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := clamp(path); err == nil {
		t.Error("clamp accepted a truncated config.json")
	}
}
