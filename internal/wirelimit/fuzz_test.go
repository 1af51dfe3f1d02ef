package wirelimit

import (
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// fuzzSchemas are the schemas FuzzScan checks, with their types.
var fuzzSchemas = []struct {
	s   *Schema
	typ protoreflect.MessageType
}{
	{nodeSchema, nodeType},
	{Answer("CreateContainer"), (&api.CreateContainerResponse{}).ProtoReflect().Type()},
	{Answer("Synchronize"), (&api.SynchronizeResponse{}).ProtoReflect().Type()},
	{Request("UpdateContainers"), (&api.UpdateContainersRequest{}).ProtoReflect().Type()},
	{ResponseEnvelope(), (&ttrpc.Response{}).ProtoReflect().Type()},
}

// FuzzScan scans arbitrary bytes as each schema's message, whole and in
// pieces, and checks with differential that the streaming Scanner, the
// plain walk and proto.Unmarshal agree: the same outcome whole and in
// pieces and by both walks; nothing the Scanner calls malformed decodes;
// and what it lets through decodes within its limits.
func FuzzScan(f *testing.F) {
	seeds := [][]byte{
		repeatField(1, 9),
		{0x3b, 0x08, 0x01, 0x13, 0x0a, 0x00, 0x14, 0x3c},                   // Node.grp{x, sub{children}}
		{0x1a, 0x03, 0x01, 0x80, 0x01, 0x22, 0x08, 1, 0, 0, 0, 2, 0, 0, 0}, // packed ints, fixed
		{0x42, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00},                          // map entry
		{0xe2, 0x5d, 0x00},       // far (1500)
		{0x0b, 0x0b, 0x0c, 0x0c}, // unknown nested groups
	}
	rsp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{}, Update: []*api.ContainerUpdate{{ContainerId: "c",
		Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(100)}}}}}}
	rsp.Adjust.AddEnv("A", "1")
	rsp.Adjust.AddMount(&api.Mount{Destination: "/d", Options: []string{"ro"}})
	rsp.Adjust.SetLinuxScheduler(&api.LinuxScheduler{Flags: []api.LinuxSchedulerFlag{1, 2}})
	if b, err := proto.Marshal(rsp); err == nil {
		seeds = append(seeds, b)
	}
	for i, b := range seeds {
		f.Add(uint8(i), uint16(3), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, cut uint16, data []byte) {
		fs := fuzzSchemas[int(which)%len(fuzzSchemas)]
		cuts := []int{int(cut % 64), int(cut % 64 * 3), int(cut)}
		if d := differential(fs.s, fs.typ, data, cuts); d != "" {
			t.Fatalf("%s: %s", fs.s.Name(), d)
		}
	})
}
