package main

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/tools/internal/prototest"
)

// compile compiles the text of nri.proto as protoc would hand it to the
// plugin (with its comments) and reads the field table from it.
func compile(t *testing.T, text string) (*table, error) {
	t.Helper()
	return readTable(prototest.File(t, text))
}

func readProto(t *testing.T) string {
	t.Helper()
	return prototest.NRIProto(t)
}

// edit replaces old, which must occur once in text, by new.
func edit(t *testing.T, text, old, new string) string {
	t.Helper()
	if n := strings.Count(text, old); n != 1 {
		t.Fatalf("%q occurs %d times in the proto", old, n)
	}
	return strings.Replace(text, old, new, 1)
}

func TestTableOfTheProto(t *testing.T) {
	tab, err := compile(t, readProto(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.fields) != 40 || len(tab.capabilities) < 30 {
		t.Fatalf("%d fields, %d capabilities", len(tab.fields), len(tab.capabilities))
	}
	mem := tab.fields[7]
	if mem.goName != "Field_MemLimit" || mem.path != "linux.resources.memory.limit" || mem.capability != "linux.resources.memory" ||
		mem.name != "memory limit" || mem.owner != "single" || mem.accessor != "MemLimit" {
		t.Errorf("MemLimit row: %+v", mem)
	}
	if env := tab.fields[5]; env.owner != "entry" || env.key != "name" {
		t.Errorf("Env row: %+v", env)
	}
}

// TestTableRefuses checks that a field added to the proto without its row,
// and malformed rows, fail generation.
func TestTableRefuses(t *testing.T) {
	text := readProto(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"adjustment field without Field",
			"  LinuxMemoryPolicy memory_policy = 12;\n",
			"  LinuxMemoryPolicy memory_policy = 12;\n  OptionalInt64 future = 13;\n",
			"linux.future"},
		{"resource field without Field",
			"  OptionalBool use_hierarchy = 8;\n",
			"  OptionalBool use_hierarchy = 8;\n  OptionalInt64 future = 9;\n",
			"linux.resources.memory.future"},
		{"Field value without its line",
			"  MemoryPolicy = 40;\n",
			"  MemoryPolicy = 40;\n  Future = 41;\n",
			"Future"},
		{"path that is not a field",
			`path=linux.memory_policy name="memory policy"`,
			`path=linux.memory_policies name="memory policy"`,
			"linux.memory_policies"},
		{"overlapping paths",
			`path=linux.rdt.clos_id name="RDT CLOS ID"`,
			`path=linux.rdt name="RDT CLOS ID"`,
			"overlaps"},
		{"bad upstream value",
			"upstream=ADJUST_LINUX_SYSCTL:21",
			"upstream=ADJUST_LINUX_SYSCTL",
			"NAME:VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, edit(t, text, tc.old, tc.new))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
