package wirelimit

import (
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// benchAnswers are CreateContainer answers: the benchmark harness's (one
// environment variable, as every plugin of `make bench-interop` answers)
// and a large one.
func benchAnswers() map[string][]byte {
	small := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{}}
	small.Adjust.AddEnv("BENCH_PLUGIN_1", "1")
	large := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{}}
	for i := range 20 {
		large.Adjust.AddEnv(fmt.Sprintf("VAR_%d", i), "value")
		large.Adjust.AddMount(&api.Mount{Destination: fmt.Sprintf("/mnt/%d", i), Source: "/src", Type: "bind", Options: []string{"rbind", "ro"}})
	}
	large.Adjust.SetLinuxCPUShares(1024)
	large.Adjust.SetLinuxMemoryLimit(1 << 30)
	for i := range 10 {
		large.Update = append(large.Update, &api.ContainerUpdate{ContainerId: fmt.Sprint("ctr-", i),
			Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}}})
	}
	out := map[string][]byte{}
	for name, m := range map[string]proto.Message{"env=1": small, "large": large} {
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		out[name] = b
	}
	return out
}

// BenchmarkCreateContainerAnswer compares the cost of checking a
// CreateContainer answer with the cost of decoding it.
func BenchmarkCreateContainerAnswer(b *testing.B) {
	s := Answer("CreateContainer")
	for name, buf := range benchAnswers() {
		b.Run(name+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Check(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(buf, &api.CreateContainerResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
