package wirelimit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// repeatField returns n occurrences of field num holding an empty
// message: the cheapest way to make a decoder allocate.
func repeatField(num protowire.Number, n int) []byte {
	one := protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), nil)
	return bytes.Repeat(one, n)
}

func TestLimits(t *testing.T) {
	sync := Answer("Synchronize")
	create := Answer("CreateContainer")
	updates := Request("UpdateContainers")
	nested := func(depth int) []byte { // Node.child nested depth deep
		var b []byte
		for range depth {
			b = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), b)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		s      *Schema
		b      []byte
		want   string // "" for no error, else a part of the error
		values int
	}{
		{"empty", sync, nil, "", 0},
		{"updates at the cap", sync, repeatField(1, MaxUpdates), "", MaxUpdates},
		{"updates above the cap", sync, repeatField(1, MaxUpdates+1), "SynchronizeResponse holds more than 1024 update entries", 0},
		{"evictions above the cap", updates, repeatField(2, MaxEvictions+1), "UpdateContainersRequest holds more than 1024 evict entries", 0},
		{"updates and evictions at their caps", updates, append(repeatField(1, MaxUpdates), repeatField(2, MaxEvictions)...), "", MaxUpdates + MaxEvictions},
		// adjust (1) repeated: every occurrence counts, though they merge.
		{"values above the bound", create, repeatField(1, MaxValues+1), "CreateContainerResponse holds more than 32768 values", 0},
		{"unknown fields are not counted", create, repeatField(999, 100000), "", 0},
		{"a singular string is not counted", create, bytes.Repeat([]byte{0x1a, 0x00}, 10), "", 0}, // evict (3): counted, see next
		{"deep nesting", nodeSchema, nested(MaxDepth), "", 0},
		{"too deep nesting", nodeSchema, nested(MaxDepth + 1), "nests deeper than 32 levels", 0},
		{"truncated", sync, []byte{0x0a, 0x05, 0x00}, "not a valid protobuf encoding", 0},
		{"field number 0", sync, []byte{0x00}, "not a valid protobuf encoding", 0},
		{"unmatched end group", sync, []byte{0x0c}, "not a valid protobuf encoding", 0},
		{"wire type 6", sync, []byte{0x0e}, "not a valid protobuf encoding", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check(tc.b)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check: %v, want an error containing %q", err, tc.want)
			}
			if d := differential(tc.s, typeOf(tc.s), tc.b, []int{1, 7, len(tc.b) / 2}); d != "" {
				t.Error(d)
			}
			if tc.want == "" && tc.values > 0 {
				var sc Scanner
				sc.Reset(tc.s, len(tc.b))
				_ = sc.Feed(tc.b)
				if sc.Values() != tc.values {
					t.Errorf("Values = %d, want %d", sc.Values(), tc.values)
				}
			}
		})
	}
}

// typeOf returns the message type of s: an NRI message's or Node's.
func typeOf(s *Schema) protoreflect.MessageType {
	if s == nodeSchema {
		return nodeType
	}
	for _, m := range []proto.Message{&api.SynchronizeResponse{}, &api.CreateContainerResponse{}, &api.UpdateContainersRequest{},
		&api.ConfigureResponse{}, &api.RegisterPluginRequest{}} {
		if m.ProtoReflect().Descriptor().FullName() == s.Name() {
			return m.ProtoReflect().Type()
		}
	}
	panic("no type for " + s.Name())
}

func TestMapEntriesOfMessagesCountTwo(t *testing.T) {
	// Entries of map m with distinct keys and no value: decoding makes
	// an empty Node for each.
	entries := func(n int) []byte {
		var b []byte
		for i := range n {
			entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), fmt.Sprint(i))
			b = protowire.AppendBytes(protowire.AppendTag(b, 8, protowire.BytesType), entry)
		}
		return b
	}
	var lerr *LimitError
	if err := nodeSchema.Check(entries(33)); !errors.As(err, &lerr) || lerr.What != "values" {
		t.Fatalf("33 entries of a map of messages under a bound of 64 values: %v, want the values exceeded", err)
	}
	if err := nodeSchema.Check(entries(32)); err != nil {
		t.Fatalf("32 entries: %v", err)
	}
	if d := differential(nodeSchema, nodeType, entries(32), nil); d != "" {
		t.Error(d)
	}
}

func TestCheckDoesNotAllocate(t *testing.T) {
	b := append(repeatField(1, MaxUpdates), repeatField(2, MaxEvictions)...)
	s := Request("UpdateContainers")
	if n := testing.AllocsPerRun(100, func() { _ = s.Check(b) }); n != 0 {
		t.Errorf("Check allocates %v times per run, want 0", n)
	}
}

func TestSchemas(t *testing.T) {
	for _, method := range []string{"Configure", "Synchronize", "Shutdown", "CreateContainer", "UpdateContainer",
		"StopContainer", "StateChange", "ValidateContainerAdjustment", "UpdatePodSandbox"} {
		if Answer(method) == nil {
			t.Errorf("no answer schema for %s", method)
		}
	}
	if Answer("Nope") != nil || Request("Nope") != nil {
		t.Error("a schema for an unknown method")
	}
	// Every answer that carries updates or evictions has them capped.
	for method, s := range answers() {
		fields := typeOfName(t, s.Name()).Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.Message() == nil || !fd.IsList() {
				continue
			}
			switch fd.Message().Name() {
			case "ContainerUpdate", "ContainerEviction":
				if _, ok := capIndex(s, fd.FullName()); !ok {
					t.Errorf("%s: %s is not capped", method, fd.FullName())
				}
			}
		}
	}
	for _, s := range []*Schema{RequestEnvelope(), ResponseEnvelope()} {
		if s.values != MaxEnvelopeValues {
			t.Errorf("%s: values bound %d, want %d", s.Name(), s.values, MaxEnvelopeValues)
		}
	}
}

func typeOfName(t *testing.T, name protoreflect.FullName) protoreflect.MessageType {
	t.Helper()
	mt, err := protoregistryFind(name)
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

func TestProbe(t *testing.T) {
	s := Answer("Synchronize")
	p := NewProbe(s)
	if err := proto.Unmarshal(repeatField(1, 3), p); err != nil || p.Err() != nil {
		t.Fatalf("a valid message: %v, %v", err, p.Err())
	}
	err := proto.Unmarshal(repeatField(1, MaxUpdates+1), p)
	var lerr *LimitError
	if err == nil || !errors.As(p.Err(), &lerr) || lerr.Limit != MaxUpdates {
		t.Fatalf("too many updates: %v, Err %v", err, p.Err())
	}
	if err := proto.Unmarshal([]byte{0x0a}, p); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestCompilePanics(t *testing.T) {
	md := (&api.SynchronizeResponse{}).ProtoReflect().Descriptor()
	for name, lim := range map[string]Limits{
		"not repeated": {Fields: map[protoreflect.FullName]int{"nri.pkg.api.v1alpha1.SynchronizeResponse.more": 1}},
		"not held":     {Fields: map[protoreflect.FullName]int{"nri.pkg.api.v1alpha1.Container.args": 1}},
		"too many": {Fields: map[protoreflect.FullName]int{"a.b": 1, "a.c": 1, "a.d": 1, "a.e": 1,
			"a.f": 1}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Compile did not panic", name)
				}
			}()
			Compile(md, lim)
		}()
	}
}

func TestScannerPieces(t *testing.T) {
	// A real answer, fed byte by byte, and with bytes past its length.
	rsp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{}, Update: []*api.ContainerUpdate{{ContainerId: "c"}}}
	rsp.Adjust.AddEnv("A", "1")
	rsp.Adjust.AddMount(&api.Mount{Destination: "/d", Options: []string{"ro", "bind"}})
	b, err := proto.Marshal(rsp)
	if err != nil {
		t.Fatal(err)
	}
	s := Answer("CreateContainer")
	var sc Scanner
	sc.Reset(s, len(b))
	for i := range b {
		if err := sc.Feed(b[i : i+1]); err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	// adjust, env entry, mount, 2 options, update = 6
	if sc.Values() != 6 {
		t.Errorf("Values = %d, want 6", sc.Values())
	}
	sc.Reset(s, len(b)-1)
	if err := sc.Feed(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("one byte more than the length: %v", err)
	}
	sc.Reset(s, len(b)+1)
	_ = sc.Feed(b)
	if err := sc.Close(); !errors.Is(err, ErrMalformed) {
		t.Errorf("one byte short: %v", err)
	}
}
