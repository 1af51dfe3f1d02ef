package fastdecode

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

// wireCase is one hand-built input. wantErr records protobuf-go's behaviour
// (checked too, so that a case documents what protobuf-go does).
type wireCase struct {
	name    string
	typ     proto.Message
	b       []byte
	wantErr bool
}

var (
	podT  = &api.PodSandbox{}
	ctrT  = &api.Container{}
	syncT = &api.SynchronizeRequest{}
)

// Building blocks.
var (
	linuxPodA = mustMarshal(&api.LinuxPodSandbox{CgroupParent: "a", Namespaces: []*api.LinuxNamespace{{Type: "net"}}})
	linuxPodB = mustMarshal(&api.LinuxPodSandbox{CgroupsPath: "b", Namespaces: []*api.LinuxNamespace{{Type: "ipc"}},
		Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-3"}}})
	linuxCtrA = mustMarshal(&api.LinuxContainer{CgroupsPath: "x", Sysctl: map[string]string{"a": "1"},
		Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}}})
	linuxCtrB = mustMarshal(&api.LinuxContainer{Sysctl: map[string]string{"a": "2", "b": "3"},
		Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}}}})
	hooks   = mustMarshal(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/true", Args: []string{"true"}}}})
	rlimit1 = mustMarshal(&api.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512})
	rlimit2 = mustMarshal(&api.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: 10})
	user    = mustMarshal(&api.User{Uid: 1000, Gid: 1000, AdditionalGids: []uint32{4, 5}})
	image   = mustMarshal(&api.Image{Name: "pause", Digest: "sha256:00"})
	cdi     = mustMarshal(&api.CDIDevice{Name: "vendor.com/gpu=0"})
	mountA  = cat(str(1, "/dst"), str(2, "bind"), str(3, "/src"), str(4, "rbind"), str(4, "ro"))
	podFull = cat(str(1, "pid1"), str(2, "name"), str(3, "uid"), str(4, "ns"), entry(5, "l1", "v1"),
		entry(5, "l2", "v2"), entry(6, "a1", "w1"), str(7, "runc"), byt(8, linuxPodA), vint(9, 42),
		str(10, "10.0.0.1"), str(10, "fd00::1"))
	ctrFull = cat(str(1, "cid1"), str(2, "pid1"), str(3, "ctr"), vint(4, 3), entry(5, "l", "v"),
		entry(6, "a", "w"), str(7, "/bin/sh"), str(7, "-c"), str(8, "A=1"), str(8, "B="), byt(9, mountA),
		byt(9, str(1, "/tmp")), byt(10, hooks), byt(11, linuxCtrA), vint(12, 77), byt(13, rlimit1),
		byt(13, rlimit2), vint(14, 1700000000), vint(15, 1700000001), vint(16, 1700000002), vint(17, 137),
		str(18, "OOMKilled"), str(19, "out of memory"), byt(20, cdi), byt(21, user), byt(22, image))
	maxVarint = ^uint64(0)
	minus1    = uint64(1<<64 - 1) // -1 as int64 varint
)

// wrongTypes returns fields numbered num with every wire type but typ (valid
// encodings), which protobuf-go keeps as unknown fields.
func wrongTypes(num protowire.Number, typ protowire.Type) []byte {
	var out []byte
	if typ != protowire.VarintType {
		out = append(out, vint(num, 5)...)
	}
	if typ != protowire.Fixed32Type {
		out = append(out, fix32(num, 6)...)
	}
	if typ != protowire.Fixed64Type {
		out = append(out, fix64(num, 7)...)
	}
	if typ != protowire.BytesType {
		out = append(out, str(num, "x")...)
	}
	out = append(out, group(num, vint(1, 1))...)
	return out
}

// malformed are inputs every message type must reject (protobuf-go does).
var malformed = []struct {
	name string
	b    []byte
}{
	{"truncated tag", []byte{0x80}},
	{"truncated 10-byte tag", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}},
	{"overflowing tag varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
	{"field number 0 varint", []byte{0x00, 0x01}},
	{"field number 0 bytes", []byte{0x02, 0x00}},
	{"field number above max", protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)},
	{"field number 2^32", protowire.AppendVarint(nil, uint64(1<<32)<<3)},
	{"end group at top level", tag(1, protowire.EndGroupType)},
	{"end group unknown field", tag(100, protowire.EndGroupType)},
	{"wire type 6", tag(1, 6)},
	{"wire type 7", tag(100, 7)},
	{"tag without length", tag(1, protowire.BytesType)},
	{"truncated length", cat(tag(1, protowire.BytesType), []byte{0x80})},
	{"length past end", cat(tag(1, protowire.BytesType), []byte{10}, []byte("ab"))},
	{"huge length", cat(tag(2, protowire.BytesType), protowire.AppendVarint(nil, 1<<62), []byte("ab"))},
	{"unknown bytes past end", cat(tag(100, protowire.BytesType), []byte{3}, []byte("a"))},
	{"truncated varint value", cat(tag(3, protowire.VarintType), []byte{0x80})},
	{"overflowing varint value", cat(tag(3, protowire.VarintType), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})},
	{"truncated fixed32", cat(tag(100, protowire.Fixed32Type), []byte{1, 2})},
	{"truncated fixed64", cat(tag(100, protowire.Fixed64Type), []byte{1, 2, 3, 4})},
	{"unterminated group", cat(tag(100, protowire.StartGroupType), vint(1, 1))},
	{"mismatched end group", cat(tag(100, protowire.StartGroupType), vint(1, 1), tag(101, protowire.EndGroupType))},
	{"group with bad inner field", cat(tag(100, protowire.StartGroupType), []byte{0x80}, tag(100, protowire.EndGroupType))},
	{"valid field then garbage", cat(str(1, "x"), []byte{0x80})},
}

// accepted are inputs every message type must accept (unknown fields).
var accepted = []struct {
	name string
	b    []byte
}{
	{"empty", nil},
	{"unknown varint", vint(100, 1)},
	{"unknown extension range varint", vint(1000, 1<<40)},
	{"unknown bytes", str(1001, "hello")},
	{"unknown fixed32/64", cat(fix32(50, 1), fix64(51, 2))},
	{"unknown group", group(60, vint(1, 1), str(2, "x"), group(3, fix32(4, 4)))},
	{"unknown group with high inner number", group(60, protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+5)<<3), []byte{1})},
	{"max field number", vint(protowire.MaxValidNumber, 3)},
	{"same unknown twice, others between", cat(vint(100, 1), str(101, "a"), vint(100, 2), fix32(102, 9), vint(100, 3))},
	{"non-minimal unknown tag", cat([]byte{0xa0, 0x86, 0x00}, []byte{1})}, // field 100 varint, 3-byte tag
	{"deeply nested unknown groups", func() []byte {
		var b []byte
		for i := 0; i < 200; i++ {
			b = append(b, tag(70, protowire.StartGroupType)...)
		}
		for i := 0; i < 200; i++ {
			b = append(b, tag(70, protowire.EndGroupType)...)
		}
		return b
	}()},
}

func podCases() []wireCase {
	c := []wireCase{
		{"all fields", podT, podFull, false},
		{"all fields twice", podT, cat(podFull, podFull), false},
		{"strings last wins", podT, cat(str(1, "a"), str(2, "n"), str(1, "b"), str(7, "x"), str(7, "")), false},
		{"pid last wins", podT, cat(vint(9, 1), vint(9, 2)), false},
		{"pid truncated to uint32", podT, vint(9, 1<<40+5), false},
		{"pid max varint", podT, vint(9, maxVarint), false},
		{"pid non-minimal varint", podT, cat(tag(9, protowire.VarintType), []byte{0x85, 0x80, 0x00}), false},
		{"non-minimal known tag", podT, cat([]byte{0x8a, 0x00}, []byte{1}, []byte("x")), false},
		{"ips append", podT, cat(str(10, "a"), str(1, "id"), str(10, ""), str(10, "c")), false},
		{"empty string fields", podT, cat(str(1, ""), str(4, "")), false},
		{"id wrong wire types", podT, cat(str(1, "id"), wrongTypes(1, protowire.BytesType)), false},
		{"pid wrong wire types", podT, cat(vint(9, 4), wrongTypes(9, protowire.VarintType)), false},
		{"labels wrong wire types", podT, cat(entry(5, "k", "v"), wrongTypes(5, protowire.BytesType)), false},
		{"annotations wrong wire types", podT, wrongTypes(6, protowire.BytesType), false},
		{"ips wrong wire types", podT, wrongTypes(10, protowire.BytesType), false},
		{"linux wrong wire types", podT, wrongTypes(8, protowire.BytesType), false},
		{"map entry missing key", podT, byt(5, str(2, "v")), false},
		{"map entry missing value", podT, byt(5, str(1, "k")), false},
		{"map entry empty", podT, byt(6), false},
		{"map duplicate keys later wins", podT, cat(entry(5, "k", "a"), entry(5, "j", "x"), entry(5, "k", "b")), false},
		{"map entry value before key", podT, byt(5, str(2, "v"), str(1, "k")), false},
		{"map entry key twice", podT, byt(5, str(1, "a"), str(2, "v"), str(1, "b")), false},
		{"map entry value twice", podT, byt(5, str(1, "k"), str(2, "v1"), str(2, "v2")), false},
		{"map entry unknown fields", podT, byt(5, str(1, "k"), vint(3, 7), str(2, "v"), fix64(4, 1), str(100, "z")), false},
		{"map entry key wrong wire type", podT, byt(5, vint(1, 5), str(2, "v")), false},
		{"map entry key as group", podT, byt(5, group(1, vint(1, 1)), str(2, "v")), false},
		{"map entry value wrong wire type", podT, byt(5, str(1, "k"), fix32(2, 5)), false},
		{"map entry unknown group", podT, byt(6, str(1, "k"), group(3, str(1, "x")), str(2, "v")), false},
		{"map entry non-minimal tags", podT, byt(5, []byte{0x8a, 0x00, 1, 'k'}, []byte{0x92, 0x80, 0x00, 1, 'v'}), false},
		{"map entry field 0", podT, byt(5, str(1, "k"), []byte{0x00, 0x01}), true},
		{"map entry field above max", podT, byt(5, protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3|uint64(protowire.VarintType)), []byte{1}), true},
		{"map entry end group", podT, byt(5, str(1, "k"), tag(3, protowire.EndGroupType)), true},
		{"map entry reserved wire type", podT, byt(5, tag(3, 6)), true},
		{"map entry unterminated group", podT, byt(5, tag(3, protowire.StartGroupType)), true},
		{"map entry truncated value", podT, byt(5, str(1, "k"), tag(2, protowire.BytesType), []byte{5}, []byte("v")), true},
		{"map entry truncated tag", podT, byt(5, []byte{0x80}), true},
		{"map entry truncated varint", podT, byt(5, tag(3, protowire.VarintType), []byte{0x80}), true},
		{"map entry past message end", podT, cat(tag(5, protowire.BytesType), []byte{9}, str(1, "k")), true},
		{"map key invalid UTF-8", podT, entry(5, bad, "v"), true},
		{"map value invalid UTF-8", podT, entry(6, "k", bad), true},
		{"map key invalid UTF-8 then overwritten", podT, byt(5, str(1, bad), str(1, "k")), true},
		{"map unknown entry field with invalid UTF-8", podT, byt(5, str(1, "k"), str(3, bad)), false},
		{"map key wrong type with invalid bytes", podT, byt(5, fix32(1, 0xffffffff)), false},
		{"id invalid UTF-8", podT, str(1, bad), true},
		{"namespace invalid UTF-8", podT, str(4, bad), true},
		{"runtime handler invalid UTF-8", podT, str(7, bad), true},
		{"ips invalid UTF-8", podT, cat(str(10, "a"), str(10, bad)), true},
		{"unknown field with invalid UTF-8", podT, str(100, bad), false},
		{"linux twice merges", podT, cat(byt(8, linuxPodA), str(1, "id"), byt(8, linuxPodB)), false},
		{"linux empty", podT, byt(8), false},
		{"linux truncated inside", podT, byt(8, linuxPodA[:len(linuxPodA)-1]), true},
		{"linux invalid UTF-8 inside", podT, byt(8, str(3, bad)), true},
		{"linux unknown inside", podT, byt(8, vint(99, 1), str(3, "cg")), false},
		{"fallback ranges non-contiguous", podT, cat(vint(100, 1), str(1, "id"), byt(8, linuxPodA), vint(100, 2),
			entry(5, "k", "v"), str(101, "x"), str(102, "y"), vint(9, 3), group(103)), false},
		{"unknown first and last", podT, cat(vint(100, 1), podFull, vint(100, 2)), false},
	}
	return c
}

func containerCases() []wireCase {
	return []wireCase{
		{"all fields", ctrT, ctrFull, false},
		{"all fields twice", ctrT, cat(ctrFull, ctrFull), false},
		{"state unknown enum value", ctrT, vint(4, 99), false},
		{"state negative", ctrT, vint(4, uint64(1<<64-5)), false},
		{"state above int32", ctrT, vint(4, 1<<40+2), false},
		{"state last wins", ctrT, cat(vint(4, 2), vint(4, 0)), false},
		{"exit code negative", ctrT, vint(17, minus1), false},
		{"exit code above int32", ctrT, vint(17, 1<<33+7), false},
		{"pid above uint32", ctrT, vint(12, 1<<32+9), false},
		{"timestamps negative and max", ctrT, cat(vint(14, minus1), vint(15, maxVarint-1), vint(16, 1<<63)), false},
		{"scalars last wins", ctrT, cat(vint(12, 1), vint(14, 1), vint(12, 2), vint(14, 0), vint(17, 5), vint(17, 0)), false},
		{"strings last wins", ctrT, cat(str(1, "a"), str(18, "r"), str(1, "b"), str(19, "m"), str(18, "")), false},
		{"args and env interleaved", ctrT, cat(str(7, "a"), str(8, "E=1"), str(1, "id"), str(7, ""), str(8, "F"), str(7, "c")), false},
		{"wrong wire types scalars", ctrT, cat(wrongTypes(4, protowire.VarintType), wrongTypes(12, protowire.VarintType),
			wrongTypes(14, protowire.VarintType), wrongTypes(15, protowire.VarintType),
			wrongTypes(16, protowire.VarintType), wrongTypes(17, protowire.VarintType)), false},
		{"wrong wire types strings", ctrT, cat(wrongTypes(1, protowire.BytesType), wrongTypes(2, protowire.BytesType),
			wrongTypes(3, protowire.BytesType), wrongTypes(18, protowire.BytesType), wrongTypes(19, protowire.BytesType)), false},
		{"wrong wire types repeated", ctrT, cat(wrongTypes(5, protowire.BytesType), wrongTypes(6, protowire.BytesType),
			wrongTypes(7, protowire.BytesType), wrongTypes(8, protowire.BytesType), wrongTypes(9, protowire.BytesType)), false},
		{"wrong wire types fallback fields", ctrT, cat(wrongTypes(10, protowire.BytesType), wrongTypes(11, protowire.BytesType),
			wrongTypes(13, protowire.BytesType), wrongTypes(20, protowire.BytesType), wrongTypes(21, protowire.BytesType),
			wrongTypes(22, protowire.BytesType)), false},
		{"labels and annotations", ctrT, cat(entry(5, "a", "1"), entry(6, "a", "2"), entry(5, "a", "3"), byt(6, str(2, "only-value"))), false},
		{"map entry unknown and wrong types", ctrT, byt(6, vint(2, 1), str(1, "k"), fix64(1, 3), str(9, "u")), false},
		{"annotation value invalid UTF-8", ctrT, entry(6, "k", bad), true},
		{"label key invalid UTF-8", ctrT, entry(5, bad, ""), true},
		{"args invalid UTF-8", ctrT, str(7, bad), true},
		{"env invalid UTF-8", ctrT, str(8, bad), true},
		{"status message invalid UTF-8", ctrT, str(19, bad), true},
		{"pod sandbox id invalid UTF-8", ctrT, str(2, bad), true},
		{"mounts each occurrence a new element", ctrT, cat(byt(9, mountA), byt(9, str(1, "/b")), byt(9, mountA)), false},
		{"mount empty", ctrT, byt(9), false},
		{"mount strings last wins, options append", ctrT, byt(9, str(1, "/a"), str(4, "x"), str(1, "/b"), str(4, "y"), str(2, "t"), str(2, "")), false},
		{"mount unknown fields", ctrT, byt(9, str(1, "/d"), vint(5, 1), str(100, "u"), fix32(6, 2), group(7, vint(1, 1))), false},
		{"mount unknown fields non-contiguous", ctrT, byt(9, vint(5, 1), str(1, "/d"), vint(6, 2), str(4, "o"), vint(5, 3), str(4, "p")), false},
		{"mount wrong wire types", ctrT, byt(9, wrongTypes(1, protowire.BytesType), wrongTypes(2, protowire.BytesType),
			wrongTypes(3, protowire.BytesType), wrongTypes(4, protowire.BytesType)), false},
		{"mount invalid UTF-8 option", ctrT, byt(9, str(4, "ro"), str(4, bad)), true},
		{"mount invalid UTF-8 destination", ctrT, byt(9, str(1, bad)), true},
		{"mount invalid UTF-8 source", ctrT, byt(9, str(3, bad)), true},
		{"mount truncated inside", ctrT, byt(9, mountA[:len(mountA)-1]), true},
		{"mount field 0 inside", ctrT, byt(9, str(1, "/d"), []byte{0x00, 0x00}), true},
		{"mount end group inside", ctrT, byt(9, tag(1, protowire.EndGroupType)), true},
		{"mount past container end", ctrT, cat(tag(9, protowire.BytesType), []byte{50}, mountA), true},
		{"linux twice merges", ctrT, cat(byt(11, linuxCtrA), str(1, "id"), byt(11, linuxCtrB)), false},
		{"hooks twice merges", ctrT, cat(byt(10, hooks), byt(10, hooks)), false},
		{"rlimits append", ctrT, cat(byt(13, rlimit1), vint(12, 3), byt(13, rlimit2)), false},
		{"user and image twice", ctrT, cat(byt(21, user), byt(22, image), byt(21, vint(1, 5)), byt(22, str(3, "cfg"))), false},
		{"linux invalid UTF-8 inside", ctrT, byt(11, str(5, bad)), true},
		{"linux malformed inside", ctrT, byt(11, []byte{0x80}), true},
		{"image invalid UTF-8 inside", ctrT, byt(22, str(1, bad)), true},
		{"fallback fields between hand fields", ctrT, cat(byt(11, linuxCtrA), str(1, "id"), byt(10, hooks), str(8, "E"),
			byt(21, user), vint(999, 1), byt(9, mountA), byt(13, rlimit1)), false},
	}
}

func eventCases() []wireCase {
	var c []wireCase
	podA := cat(str(1, "a"), entry(5, "x", "1"), byt(8, linuxPodA), str(10, "ip1"), vint(100, 1))
	podB := cat(str(2, "b"), entry(5, "y", "2"), entry(5, "x", "3"), byt(8, linuxPodB), vint(9, 5), str(10, "ip2"), vint(100, 2))
	ctrA := cat(str(1, "c"), str(8, "A=1"), byt(9, mountA), byt(11, linuxCtrA), entry(6, "k", "v"), vint(4, 1))
	ctrB := cat(str(3, "n"), str(8, "B=2"), byt(9, str(1, "/b")), byt(11, linuxCtrB), entry(6, "k", "w"), vint(99, 1))
	for _, typ := range podOnlyTypes {
		n := name(typ) + ": "
		c = append(c,
			wireCase{n + "pod", typ, byt(1, podFull), false},
			wireCase{n + "pod twice merges", typ, cat(byt(1, podA), byt(1, podB)), false},
			wireCase{n + "pod empty", typ, byt(1), false},
			wireCase{n + "pod empty after pod", typ, cat(byt(1, podA), byt(1)), false},
			wireCase{n + "container field is unknown", typ, cat(byt(1, podA), byt(2, ctrFull)), false},
			wireCase{n + "invalid container field is unknown", typ, byt(2, str(1, bad)), false},
			wireCase{n + "pod wrong wire types", typ, wrongTypes(1, protowire.BytesType), false},
			wireCase{n + "unknown fields", typ, cat(vint(3, 1), byt(1, podA), str(1000, "x")), false},
			wireCase{n + "pod invalid UTF-8", typ, byt(1, str(1, bad)), true},
			wireCase{n + "pod truncated", typ, byt(1, podFull[:len(podFull)-2]), true},
			wireCase{n + "pod past end", typ, cat(tag(1, protowire.BytesType), []byte{100}, podA), true},
		)
	}
	for _, typ := range containerEventTypes {
		n := name(typ) + ": "
		c = append(c,
			wireCase{n + "pod and container", typ, cat(byt(1, podFull), byt(2, ctrFull)), false},
			wireCase{n + "container first", typ, cat(byt(2, ctrFull), byt(1, podFull)), false},
			wireCase{n + "pod twice merges", typ, cat(byt(1, podA), byt(2, ctrA), byt(1, podB)), false},
			wireCase{n + "container twice merges", typ, cat(byt(2, ctrA), byt(1, podA), byt(2, ctrB)), false},
			wireCase{n + "container empty", typ, byt(2), false},
			wireCase{n + "wrong wire types", typ, cat(wrongTypes(1, protowire.BytesType), wrongTypes(2, protowire.BytesType)), false},
			wireCase{n + "unknown fields", typ, cat(str(3, "x"), byt(2, ctrA), vint(1000, 1), byt(1, podA), fix32(4, 1)), false},
			wireCase{n + "container invalid UTF-8", typ, cat(byt(1, podA), byt(2, str(8, bad))), true},
			wireCase{n + "container malformed", typ, byt(2, []byte{0x00}), true},
			wireCase{n + "container linux malformed", typ, byt(2, byt(11, []byte{0x80})), true},
		)
	}
	return c
}

func syncCases() []wireCase {
	return []wireCase{
		{"pods, containers, more", syncT, cat(byt(1, podFull), byt(1, podFull), byt(2, ctrFull), byt(2, ctrFull), vint(3, 1)), false},
		{"interleaved", syncT, cat(byt(2, ctrFull), byt(1, podFull), vint(3, 1), byt(2, str(1, "c2")), byt(1, str(1, "p2"))), false},
		{"each occurrence a new element", syncT, cat(byt(1, str(1, "a")), byt(1, str(2, "b")), byt(2), byt(2)), false},
		{"more last wins", syncT, cat(vint(3, 1), vint(3, 0)), false},
		{"more non-canonical true", syncT, vint(3, 2), false},
		{"more max varint", syncT, vint(3, maxVarint), false},
		{"more bit above 32", syncT, vint(3, 1<<40), false},
		{"wrong wire types", syncT, cat(wrongTypes(1, protowire.BytesType), wrongTypes(2, protowire.BytesType),
			wrongTypes(3, protowire.VarintType)), false},
		{"unknown fields", syncT, cat(vint(4, 1), byt(1, podFull), str(1000, "x"), byt(2, ctrFull), vint(4, 2)), false},
		{"pod invalid", syncT, byt(1, str(1, bad)), true},
		{"container invalid", syncT, cat(byt(1, podFull), byt(2, byt(9, str(4, bad)))), true},
		{"container truncated", syncT, byt(2, ctrFull[:len(ctrFull)-1]), true},
		{"more truncated", syncT, cat(tag(3, protowire.VarintType), []byte{0xff}), true},
	}
}

// allCases returns every hand-built case, including the malformed and
// accepted inputs applied to every fast type.
func allCases() []wireCase {
	var c []wireCase
	c = append(c, podCases()...)
	c = append(c, containerCases()...)
	c = append(c, eventCases()...)
	c = append(c, syncCases()...)
	for _, lc := range linuxCases() {
		lc.name = name(lc.typ) + ": " + lc.name
		c = append(c, lc)
	}
	for _, typ := range fastTypes {
		for _, m := range malformed {
			c = append(c, wireCase{name(typ) + ": " + m.name, typ, m.b, true})
		}
		for _, a := range accepted {
			c = append(c, wireCase{name(typ) + ": " + a.name, typ, a.b, false})
		}
	}
	return c
}

func TestDifferential(t *testing.T) {
	for _, tc := range allCases() {
		t.Run(name(tc.typ)+"/"+tc.name, func(t *testing.T) {
			if err := proto.Unmarshal(tc.b, newOf(tc.typ)); (err != nil) != tc.wantErr {
				t.Fatalf("test expectation wrong: proto.Unmarshal error = %v, wantErr %v", err, tc.wantErr)
			}
			if d := diffDecode(tc.typ, tc.b, Unmarshal); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// The harness must be able to fail: decoders that differ from protobuf-go
// in the ways a hand decoder could (dropping unknown fields, aliasing the
// input, not resetting, accepting invalid UTF-8, keeping the first map
// value) are caught by some case.
func TestHarnessDetectsBrokenDecoders(t *testing.T) {
	broken := map[string]func([]byte, proto.Message) error{
		"drops unknown fields": func(b []byte, m proto.Message) error {
			return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
		},
		"does not reset": func(b []byte, m proto.Message) error {
			return proto.UnmarshalOptions{Merge: true}.Unmarshal(b, m)
		},
		"accepts invalid UTF-8": func(b []byte, m proto.Message) error {
			err := proto.Unmarshal(b, m)
			var u interface{ InvalidUTF8() bool }
			if errors.As(err, &u) && u.InvalidUTF8() {
				return nil
			}
			return err
		},
		"error not wrapping proto.Error": func(b []byte, m proto.Message) error {
			if err := proto.Unmarshal(b, m); err != nil {
				return fmt.Errorf("plain: %s", err)
			}
			return nil
		},
		"first map value wins": func(b []byte, m proto.Message) error {
			if err := Unmarshal(b, m); err != nil {
				return err
			}
			if p, ok := m.(*api.PodSandbox); ok && p.Labels["k"] == "b" {
				p.Labels["k"] = "a"
			}
			return nil
		},
		"unknown enum values dropped": func(b []byte, m proto.Message) error {
			if err := Unmarshal(b, m); err != nil {
				return err
			}
			if c, ok := m.(*api.Container); ok && api.ContainerState_name[int32(c.State)] == "" {
				c.State = 0
			}
			return nil
		},
	}
	cases := allCases()
	for what, dec := range broken {
		caught := false
		for _, tc := range cases {
			if diffDecode(tc.typ, tc.b, dec) != "" {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("no case catches a decoder that %s", what)
		}
	}
}

// TestHarnessDetectsAliasing: diffDecode overwrites the input after
// decoding, so a decoder whose strings alias it is caught.
func TestHarnessDetectsAliasing(t *testing.T) {
	aliasing := func(b []byte, m proto.Message) error {
		if err := Unmarshal(b, m); err != nil {
			return err
		}
		if p, ok := m.(*api.PodSandbox); ok && len(p.Id) > 0 {
			// Re-point Id into b (what string(b) avoids).
			v, _ := protowire.ConsumeBytes(b[1:])
			p.Id = unsafeString(v)
		}
		return nil
	}
	if diffDecode(podT, str(1, "pod-id"), aliasing) == "" {
		t.Fatal("aliasing decoder not caught")
	}
}

// TestNilMessages: a typed nil pointer behaves as with proto.Unmarshal.
func TestNilMessages(t *testing.T) {
	outcome := func(dec func([]byte, proto.Message) error, m proto.Message) (res string) {
		defer func() {
			if r := recover(); r != nil {
				res = "panic"
			}
		}()
		if err := dec(podFull, m); err != nil {
			return "error"
		}
		return "ok"
	}
	for _, typ := range fastTypes {
		nilm := reflectNil(typ)
		if w, g := outcome(proto.Unmarshal, nilm), outcome(Unmarshal, nilm); w != g {
			t.Errorf("%s: nil message: proto.Unmarshal %s, Unmarshal %s", name(typ), w, g)
		}
	}
}

// TestOtherTypesUseProto: a type without a fast path decodes like proto.Unmarshal.
func TestOtherTypesUseProto(t *testing.T) {
	others := []proto.Message{
		&api.UpdateContainerRequest{}, &api.UpdatePodSandboxRequest{}, &api.StateChangeEvent{},
		&api.ValidateContainerAdjustmentRequest{}, &api.ConfigureRequest{}, &api.Mount{}, &api.LinuxContainer{},
	}
	for _, typ := range others {
		full := newOf(typ)
		codecfixture.Populate(full.ProtoReflect(), 3, 2, false)
		b := mustMarshal(full)
		for _, in := range [][]byte{b, b[:len(b)/2], cat(b, vint(1500, 1))} {
			if d := diffDecode(typ, in, Unmarshal); d != "" {
				t.Error(d)
			}
		}
	}
}

// TestRoundTrip: fully populated messages (every field, recursively,
// including linux subtrees) survive Marshal then Unmarshal both ways.
func TestRoundTrip(t *testing.T) {
	for _, typ := range fastTypes {
		for seed := 0; seed < 3; seed++ {
			full := newOf(typ)
			codecfixture.Populate(full.ProtoReflect(), seed, 2, false)
			if bad := codecfixture.Unset(full.ProtoReflect(), false); bad != "" {
				t.Fatalf("%s: populate left %s unset", name(typ), bad)
			}
			for _, det := range []bool{false, true} {
				b, err := proto.MarshalOptions{Deterministic: det}.Marshal(full)
				if err != nil {
					t.Fatal(err)
				}
				want, got := newOf(typ), newOf(typ)
				if err := proto.Unmarshal(b, want); err != nil {
					t.Fatal(err)
				}
				if err := Unmarshal(b, got); err != nil {
					t.Fatalf("%s: %v", name(typ), err)
				}
				if !proto.Equal(full, got) || !proto.Equal(want, got) {
					t.Fatalf("%s: round trip differs:\n%s\nvs\n%s", name(typ), textOf(full), textOf(got))
				}
				if len(got.ProtoReflect().GetUnknown()) != 0 {
					t.Fatalf("%s: unexpected unknown fields", name(typ))
				}
				// And back: our result marshals to the same bytes.
				if det {
					if b2 := mustMarshal(got); string(b2) != string(b) {
						t.Fatalf("%s: re-marshal differs", name(typ))
					}
				}
			}
		}
	}
}

// TestSchema checks that the fields decoded by hand have, in the generated
// descriptors, the numbers, kinds and cardinalities the decoder assumes.
func TestSchema(t *testing.T) {
	type f struct {
		num  protowire.Number
		name string
		kind string // "string", "uint32", "int64", "int32", "bool", "enum", "map", "message:Name"
		rep  bool
	}
	check := func(m proto.Message, fields []f, exhaustiveNumbers []protowire.Number) {
		md := m.ProtoReflect().Descriptor()
		if md.Syntax() != protoreflect.Proto3 {
			t.Errorf("%s is not proto3", md.FullName())
		}
		for _, want := range fields {
			fd := md.Fields().ByNumber(want.num)
			if fd == nil {
				t.Errorf("%s: no field %d", md.FullName(), want.num)
				continue
			}
			kind := fd.Kind().String()
			switch {
			case fd.IsMap():
				kind = "map"
				if fd.MapKey().Kind() != protoreflect.StringKind || fd.MapValue().Kind() != protoreflect.StringKind {
					kind = "map-not-string-string"
				}
			case fd.Message() != nil:
				kind = "message:" + string(fd.Message().Name())
			}
			rep := fd.IsList()
			if string(fd.Name()) != want.name || kind != want.kind || rep != want.rep || fd.HasPresence() && fd.Message() == nil {
				t.Errorf("%s field %d: got %s %s repeated=%v presence=%v, decoder assumes %s %s repeated=%v",
					md.FullName(), want.num, fd.Name(), kind, rep, fd.HasPresence(), want.name, want.kind, want.rep)
			}
		}
		if exhaustiveNumbers != nil {
			for i := 0; i < md.Fields().Len(); i++ {
				n := md.Fields().Get(i).Number()
				ok := false
				for _, e := range exhaustiveNumbers {
					ok = ok || e == n
				}
				if !ok {
					t.Errorf("%s has field %d (%s) the decoder would route to the fallback; check it is not hot",
						md.FullName(), n, md.Fields().Get(i).Name())
				}
			}
		}
	}
	check(&api.PodSandbox{}, []f{
		{1, "id", "string", false}, {2, "name", "string", false}, {3, "uid", "string", false},
		{4, "namespace", "string", false}, {5, "labels", "map", false}, {6, "annotations", "map", false},
		{7, "runtime_handler", "string", false}, {9, "pid", "uint32", false}, {10, "ips", "string", true},
	}, nil)
	check(&api.Container{}, []f{
		{1, "id", "string", false}, {2, "pod_sandbox_id", "string", false}, {3, "name", "string", false},
		{4, "state", "enum", false}, {5, "labels", "map", false}, {6, "annotations", "map", false},
		{7, "args", "string", true}, {8, "env", "string", true}, {9, "mounts", "message:Mount", true},
		{12, "pid", "uint32", false}, {14, "created_at", "int64", false}, {15, "started_at", "int64", false},
		{16, "finished_at", "int64", false}, {17, "exit_code", "int32", false},
		{18, "status_reason", "string", false}, {19, "status_message", "string", false},
	}, nil)
	if ed := (&api.Container{}).ProtoReflect().Descriptor().Fields().ByNumber(4).Enum(); ed.IsClosed() {
		t.Errorf("ContainerState is closed; the decoder keeps unknown values")
	}
	check(&api.Mount{}, []f{
		{1, "destination", "string", false}, {2, "type", "string", false}, {3, "source", "string", false},
		{4, "options", "string", true},
	}, nil)
	check(&api.SynchronizeRequest{}, []f{
		{1, "pods", "message:PodSandbox", true}, {2, "containers", "message:Container", true}, {3, "more", "bool", false},
	}, []protowire.Number{1, 2, 3})
	opt := func(m string) string { return "message:" + m }
	check(&api.LinuxPodSandbox{}, []f{
		{1, "pod_overhead", opt("LinuxResources"), false}, {2, "pod_resources", opt("LinuxResources"), false},
		{3, "cgroup_parent", "string", false}, {4, "cgroups_path", "string", false},
		{5, "namespaces", opt("LinuxNamespace"), true}, {6, "resources", opt("LinuxResources"), false},
	}, nil)
	check(&api.LinuxContainer{}, []f{
		{1, "namespaces", opt("LinuxNamespace"), true}, {3, "resources", opt("LinuxResources"), false},
		{4, "oom_score_adj", opt("OptionalInt"), false}, {5, "cgroups_path", "string", false}, {9, "sysctl", "map", false},
	}, nil)
	check(&api.LinuxNamespace{}, []f{{1, "type", "string", false}, {2, "path", "string", false}}, nil)
	check(&api.LinuxResources{}, []f{
		{1, "memory", opt("LinuxMemory"), false}, {2, "cpu", opt("LinuxCPU"), false},
		{6, "unified", "map", false}, {8, "pids", opt("LinuxPids"), false},
	}, nil)
	check(&api.LinuxMemory{}, []f{
		{1, "limit", opt("OptionalInt64"), false}, {2, "reservation", opt("OptionalInt64"), false},
		{3, "swap", opt("OptionalInt64"), false}, {4, "kernel", opt("OptionalInt64"), false},
		{5, "kernel_tcp", opt("OptionalInt64"), false}, {6, "swappiness", opt("OptionalUInt64"), false},
		{7, "disable_oom_killer", opt("OptionalBool"), false}, {8, "use_hierarchy", opt("OptionalBool"), false},
	}, nil)
	check(&api.LinuxCPU{}, []f{
		{1, "shares", opt("OptionalUInt64"), false}, {2, "quota", opt("OptionalInt64"), false},
		{3, "period", opt("OptionalUInt64"), false}, {4, "realtime_runtime", opt("OptionalInt64"), false},
		{5, "realtime_period", opt("OptionalUInt64"), false}, {6, "cpus", "string", false}, {7, "mems", "string", false},
	}, nil)
	check(&api.LinuxPids{}, []f{{1, "limit", "int64", false}}, []protowire.Number{1})
	check(&api.OptionalInt{}, []f{{1, "value", "int64", false}}, []protowire.Number{1})
	check(&api.OptionalInt64{}, []f{{1, "value", "int64", false}}, []protowire.Number{1})
	check(&api.OptionalUInt64{}, []f{{1, "value", "uint64", false}}, []protowire.Number{1})
	check(&api.OptionalBool{}, []f{{1, "value", "bool", false}}, []protowire.Number{1})
	for _, typ := range podOnlyTypes {
		check(typ, []f{{1, "pod", "message:PodSandbox", false}}, []protowire.Number{1})
	}
	for _, typ := range containerEventTypes {
		check(typ, []f{{1, "pod", "message:PodSandbox", false}, {2, "container", "message:Container", false}},
			[]protowire.Number{1, 2})
	}
}
