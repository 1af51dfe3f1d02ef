package api_test

import (
	"os"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

func TestOptionalConstructors(t *testing.T) {
	i, i64, u64, u32, i32, s, b := 7, int64(-8), uint64(9), uint32(10), int32(-11), "str", true
	mode := os.FileMode(0o640)
	strs := []string{"a", "b"}
	for _, tc := range []struct {
		name string
		got  proto.Message
		want proto.Message
	}{
		{"Int64(int)", api.Int64(i), &api.OptionalInt64{Value: 7}},
		{"Int64(uint)", api.Int64(uint(3)), &api.OptionalInt64{Value: 3}},
		{"Int64(int64)", api.Int64(i64), &api.OptionalInt64{Value: -8}},
		{"Int64(uint64)", api.Int64(u64), &api.OptionalInt64{Value: 9}},
		{"Int64(*int64)", api.Int64(&i64), &api.OptionalInt64{Value: -8}},
		{"Int64(*uint64)", api.Int64(&u64), &api.OptionalInt64{Value: 9}},
		{"Int64(*Optional)", api.Int64(&api.OptionalInt64{Value: 5}), &api.OptionalInt64{Value: 5}},
		{"UInt64(int)", api.UInt64(i), &api.OptionalUInt64{Value: 7}},
		{"UInt64(int64)", api.UInt64(int64(12)), &api.OptionalUInt64{Value: 12}},
		{"UInt64(uint64)", api.UInt64(u64), &api.OptionalUInt64{Value: 9}},
		{"UInt64(uint)", api.UInt64(uint(4)), &api.OptionalUInt64{Value: 4}},
		{"UInt64(*uint64)", api.UInt64(&u64), &api.OptionalUInt64{Value: 9}},
		{"UInt64(*int64)", api.UInt64(&[]int64{13}[0]), &api.OptionalUInt64{Value: 13}},
		{"UInt64(*Optional)", api.UInt64(&api.OptionalUInt64{Value: 6}), &api.OptionalUInt64{Value: 6}},
		{"Int(int)", api.Int(i), &api.OptionalInt{Value: 7}},
		{"Int(*int)", api.Int(&i), &api.OptionalInt{Value: 7}},
		{"Int(*Optional)", api.Int(&api.OptionalInt{Value: -1}), &api.OptionalInt{Value: -1}},
		{"Int32(int32)", api.Int32(i32), &api.OptionalInt32{Value: -11}},
		{"Int32(*int32)", api.Int32(&i32), &api.OptionalInt32{Value: -11}},
		{"UInt32(uint32)", api.UInt32(u32), &api.OptionalUInt32{Value: 10}},
		{"UInt32(*uint32)", api.UInt32(&u32), &api.OptionalUInt32{Value: 10}},
		{"String(string)", api.String(s), &api.OptionalString{Value: "str"}},
		{"String(*string)", api.String(&s), &api.OptionalString{Value: "str"}},
		{"String(*Optional)", api.String(&api.OptionalString{Value: "x"}), &api.OptionalString{Value: "x"}},
		{"Bool(bool)", api.Bool(b), &api.OptionalBool{Value: true}},
		{"Bool(*bool)", api.Bool(&b), &api.OptionalBool{Value: true}},
		{"FileMode(FileMode)", api.FileMode(mode), &api.OptionalFileMode{Value: 0o640}},
		{"FileMode(*FileMode)", api.FileMode(&mode), &api.OptionalFileMode{Value: 0o640}},
		{"FileMode(uint32)", api.FileMode(uint32(0o600)), &api.OptionalFileMode{Value: 0o600}},
		{"RepeatedString([]string)", api.RepeatedString(strs), &api.OptionalRepeatedString{Value: []string{"a", "b"}}},
		{"RepeatedString(*[]string)", api.RepeatedString(&strs), &api.OptionalRepeatedString{Value: []string{"a", "b"}}},
	} {
		if !proto.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestOptionalConstructorsNil(t *testing.T) {
	for name, isNil := range map[string]bool{
		"Int64(nil *int64)":     api.Int64((*int64)(nil)) == nil,
		"Int64(string)":         api.Int64("1") == nil,
		"Int64(nil Optional)":   api.Int64((*api.OptionalInt64)(nil)) == nil,
		"UInt64(nil *uint64)":   api.UInt64((*uint64)(nil)) == nil,
		"UInt64(float)":         api.UInt64(1.5) == nil,
		"Int(nil *int)":         api.Int((*int)(nil)) == nil,
		"Int(int64)":            api.Int(int64(1)) == nil,
		"Int32(nil)":            api.Int32((*int32)(nil)) == nil,
		"UInt32(int)":           api.UInt32(1) == nil,
		"String(nil *string)":   api.String((*string)(nil)) == nil,
		"String(int)":           api.String(1) == nil,
		"Bool(nil *bool)":       api.Bool((*bool)(nil)) == nil,
		"FileMode(nil)":         api.FileMode((*os.FileMode)(nil)) == nil,
		"FileMode(int)":         api.FileMode(1) == nil,
		"RepeatedString(nil *)": api.RepeatedString((*[]string)(nil)) == nil,
		"RepeatedString(int)":   api.RepeatedString(1) == nil,
	} {
		if !isNil {
			t.Errorf("%s: want nil", name)
		}
	}
}

func TestOptionalGet(t *testing.T) {
	if v := api.Int64(int64(3)).Get(); v == nil || *v != 3 {
		t.Errorf("OptionalInt64.Get = %v", v)
	}
	if v := (*api.OptionalInt64)(nil).Get(); v != nil {
		t.Errorf("nil OptionalInt64.Get = %v", *v)
	}
	if v := api.UInt64(uint64(4)).Get(); v == nil || *v != 4 {
		t.Errorf("OptionalUInt64.Get = %v", v)
	}
	if v := api.Int(5).Get(); v == nil || *v != 5 {
		t.Errorf("OptionalInt.Get = %v", v)
	}
	if v := api.Int32(int32(6)).Get(); v == nil || *v != 6 {
		t.Errorf("OptionalInt32.Get = %v", v)
	}
	if v := api.UInt32(uint32(7)).Get(); v == nil || *v != 7 {
		t.Errorf("OptionalUInt32.Get = %v", v)
	}
	if v := api.String("s").Get(); v == nil || *v != "s" {
		t.Errorf("OptionalString.Get = %v", v)
	}
	if v := api.Bool(true).Get(); v == nil || !*v {
		t.Errorf("OptionalBool.Get = %v", v)
	}
	if v := api.FileMode(os.FileMode(0o755)).Get(); v == nil || *v != 0o755 {
		t.Errorf("OptionalFileMode.Get = %v", v)
	}
	if v := (*api.OptionalFileMode)(nil).Get(); v != nil {
		t.Errorf("nil OptionalFileMode.Get = %v", *v)
	}
	in := []string{"x"}
	o := api.RepeatedString(in)
	in[0] = "changed"
	got := o.Get()
	if got == nil || !slices.Equal(*got, []string{"x"}) {
		t.Fatalf("OptionalRepeatedString.Get = %v, want [x] (constructor must copy)", got)
	}
	(*got)[0] = "mutated"
	if o.Value[0] != "x" {
		t.Errorf("Get returned the wrapped slice itself")
	}
}

func TestClone(t *testing.T) {
	m := &api.Mount{Destination: "/d", Options: []string{"ro"}}
	c := api.Clone(m)
	if !proto.Equal(m, c) || c == m {
		t.Fatalf("Clone = %v (same pointer: %v)", c, c == m)
	}
	c.Options[0] = "rw"
	if m.Options[0] != "ro" {
		t.Errorf("Clone shares data with the original")
	}
	if got := api.Clone((*api.Mount)(nil)); got != nil {
		t.Errorf("Clone(nil) = %v", got)
	}
	r := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1)}, Unified: map[string]string{"k": "v"}}
	rc := r.Copy()
	rc.Memory.Limit.Value = 2
	rc.Unified["k"] = "w"
	if r.Memory.Limit.Value != 1 || r.Unified["k"] != "v" {
		t.Errorf("Copy shares data with the original")
	}
	if (*api.LinuxResources)(nil).Copy() != nil {
		t.Errorf("nil Copy not nil")
	}
	s := []string{"a"}
	if d := api.DupStringSlice(s); !slices.Equal(d, s) || &d[0] == &s[0] {
		t.Errorf("DupStringSlice = %v", d)
	}
	if api.DupStringSlice(nil) != nil || api.DupStringMap(nil) != nil {
		t.Errorf("Dup of nil not nil")
	}
	mp := map[string]string{"a": "b"}
	d := api.DupStringMap(mp)
	d["a"] = "c"
	if mp["a"] != "b" {
		t.Errorf("DupStringMap shares the map")
	}
}
