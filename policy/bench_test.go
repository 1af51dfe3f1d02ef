package policy

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// benchPolicy has 20 grants (rules for 20 plugins, the figure of issue
// 25's cost measurement); the one checked is the last, with a rule for
// each kind of change of a typical answer.
const benchPolicy = `
grants:
  - plugins: [p01]
    adjust: {env: ["A_*"]}
  - plugins: [p02]
    adjust: {annotations: ["a.io/*"]}
  - plugins: [p03]
    adjust: {cdiDevices: ["x.com/*"]}
  - plugins: [p04]
    adjust: {sysctl: ["net.*"]}
  - plugins: [p05]
    adjust: {hooks: [/usr/bin/x]}
  - plugins: [p06]
    adjust: {args: true}
  - plugins: [p07]
    adjust: {resources: {cpu: {}}}
  - plugins: [p08]
    adjust: {resources: {memory: {maxLimit: 1Gi}}}
  - plugins: [p09]
    adjust: {rlimits: {RLIMIT_NOFILE: {hard: 1024}}}
  - plugins: [p10]
    adjust: {oomScoreAdj: {min: 0, max: 100}}
  - plugins: [p11]
    adjust: {seccompPolicy: true}
  - plugins: [p12]
    adjust: {namespaces: {create: [ipc]}}
  - plugins: [p13]
    adjust: {netDevices: ["eth*"]}
  - plugins: [p14]
    adjust: {scheduler: {policies: [SCHED_BATCH]}}
  - plugins: [p15]
    adjust: {memoryPolicy: {modes: [MPOL_BIND]}}
  - plugins: [p16]
    adjust: {ioPriority: {classes: [IOPRIO_CLASS_BE]}}
  - plugins: [p17]
    adjust: {rdt: {closIds: [gold]}}
  - plugins: [p18]
    adjust: {cgroupsPath: true}
  - plugins: ["p19", "*-p19"]
    update: {cpu: {}}
  - plugins: [device-injector]
    where: {namespaces: [gpu-workloads]}
    adjust:
      annotations: ["example.com/*"]
      env: ["NVIDIA_*", "CUDA_*"]
      mounts:
        sources: [{path: /srv/models}, {path: /var/cache/rw, readWrite: true}]
      devices:
        - {path: "/dev/nvidia[0-9]*", type: c, major: 195}
        - {path: /dev/nvidiactl, type: c, major: 195, minor: 255}
      cdiDevices: ["nvidia.com/gpu=*"]
      rlimits: {RLIMIT_MEMLOCK: {hard: 67108864, soft: 67108864}}
      resources:
        memory: {maxLimit: 8Gi}
        cpu: {}
`

// benchGrant returns the device-injector grant of benchPolicy and a
// typical answer it allows.
func benchGrant(tb testing.TB) (*Grant, *api.ContainerAdjustment) {
	tb.Helper()
	g := mustParse(tb, benchPolicy).GrantFor("10", "device-injector")
	adj := &api.ContainerAdjustment{
		Annotations: map[string]string{"example.com/gpu": "0"},
		Env:         []*api.KeyValue{{Key: "NVIDIA_VISIBLE_DEVICES", Value: "0"}, {Key: "CUDA_CACHE_PATH", Value: "/cache"}},
		Mounts: []*api.Mount{
			{Source: "/srv/models/llama", Destination: "/models", Type: "bind", Options: []string{"rbind", "ro", "nosuid"}},
			{Source: "/var/cache/rw/x", Destination: "/cache", Type: "bind", Options: []string{"rbind", "rw"}},
		},
		Rlimits:    []*api.POSIXRlimit{{Type: "RLIMIT_MEMLOCK", Hard: 1 << 20, Soft: 1 << 20}},
		CDIDevices: []*api.CDIDevice{{Name: "nvidia.com/gpu=0"}},
		Linux: &api.LinuxContainerAdjustment{
			Devices: []*api.LinuxDevice{{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0},
				{Path: "/dev/nvidiactl", Type: "c", Major: 195, Minor: 255}},
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 4 << 30}},
				Cpu:    &api.LinuxCPU{Cpus: "0-3"},
			},
		},
	}
	return g, adj
}

// BenchmarkCheckAdjustment measures the check of a typical answer (2
// variables, 2 mounts, 2 devices, a CDI device, an annotation, an rlimit,
// memory and CPU) under a policy of 20 grants: the allow path, and the
// refusal of the host-root attack.
func BenchmarkCheckAdjustment(b *testing.B) {
	g, adj := benchGrant(b)
	b.Run("allowed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if g.CheckAdjustment(testPod, testCtr, adj) != nil {
				b.Fatal("refused")
			}
		}
	})
	attack := &api.ContainerAdjustment{
		Mounts: []*api.Mount{{Source: "/", Destination: "/host", Type: "bind", Options: []string{"rbind", "rw"}}},
		Linux:  &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/sda", Type: "b", Major: 8}}},
	}
	b.Run("denied", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(g.CheckAdjustment(testPod, testCtr, attack)) != 2 {
				b.Fatal("allowed")
			}
		}
	})
}

// BenchmarkGrantFor measures finding a plugin's grant (at registration)
// in a policy of 20 grants, for the last one and for the default.
func BenchmarkGrantFor(b *testing.B) {
	p := mustParse(b, benchPolicy)
	b.ReportAllocs()
	for b.Loop() {
		if p.GrantFor("10", "device-injector") == nil || p.GrantFor("10", "other") == nil {
			b.Fatal("no grant")
		}
	}
}
