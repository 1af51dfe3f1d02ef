package main

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
)

// documentedJSONKeys returns the keys of docs/cli.md's JSON table as
// paths ("plugins[].name", "policy.source"): a row's keys ("`plugins[].name`,
// `.index`": the second relative to the first's parent), and for a row
// of objects the keys its meaning lists in braces ("`{plugin, reason}`").
func documentedJSONKeys(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "## JSON output")
	if !ok {
		t.Fatal("docs/cli.md has no JSON output section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	key := regexp.MustCompile("`([^`]+)`")
	braces := regexp.MustCompile("`\\{([^}`]+)\\}")
	out := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		parent := ""
		for _, m := range key.FindAllStringSubmatch(cells[1], -1) {
			k := m[1]
			if rel, ok := strings.CutPrefix(k, "."); ok {
				k = parent + rel
			} else if i := strings.LastIndex(k, "."); i >= 0 {
				parent = k[:i+1]
			}
			out[k] = true
		}
		if strings.Contains(cells[2], "object") {
			if m := braces.FindStringSubmatch(cells[3]); m != nil {
				for _, f := range strings.Split(m[1], ",") {
					name := strings.Fields(f)[0]
					out[strings.TrimSpace(key.FindAllStringSubmatch(cells[1], 1)[0][1])+"[]."+name] = true
				}
			}
		}
	}
	return out
}

// jsonKeys returns the paths of the JSON keys of type t below prefix:
// structs by their json tags, lists of structs with "[]"; an OCI spec is
// one value (its keys are the OCI runtime specification's).
func jsonKeys(t reflect.Type, prefix string, out map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := prefix + name
		out[path] = true
		ft := f.Type
		list := ""
		if ft.Kind() == reflect.Slice {
			ft, list = ft.Elem(), "[]"
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(rspec.Spec{}) {
			jsonKeys(ft, path+list+".", out)
		}
	}
}

// TestJSONKeysDocumented checks that docs/cli.md's JSON table documents
// every key of the report, and no key the report does not have.
func TestJSONKeysDocumented(t *testing.T) {
	documented := documentedJSONKeys(t)
	actual := map[string]bool{}
	jsonKeys(reflect.TypeOf(report.Report{}), "", actual)
	for _, k := range slices.Sorted(maps.Keys(actual)) {
		if !documented[k] {
			t.Errorf("the report's JSON key %s is not in docs/cli.md's table", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(documented)) {
		if !actual[k] {
			t.Errorf("docs/cli.md's table documents %s, which the report does not have", k)
		}
	}
}
