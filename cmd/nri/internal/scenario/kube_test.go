package scenario

import (
	"strings"
	"testing"
)

func TestParseKube(t *testing.T) {
	text := `node: {cgroupDriver: cgroupfs, memory: 64Gi}
pods:
  - name: p
    overhead: {cpu: 100m, memory: 64Mi}
containers:
  - name: c
    pod: p
    requests: {cpu: "0.5", memory: 256Mi}
    limits: {cpu: "2", memory: 1Gi}
    resources: {cpusetCpus: "0-1"}
steps:
  - runPod: p
  - createContainer: c
    expect:
      resources: {cpusetCpus: "2,3", cpuShares: 512}
`
	s, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Node; n == nil || n.CgroupDriver != CgroupDriverCgroupfs || *n.Memory != 64<<30 {
		t.Errorf("node %+v", n)
	}
	if o := s.Pods[0].Overhead; o == nil || *o.CPU != 100 || *o.Memory != 64<<20 {
		t.Errorf("overhead %+v", o)
	}
	c := s.Containers[0]
	if *c.Requests.CPU != 500 || *c.Requests.Memory != 256<<20 || *c.Limits.CPU != 2000 || *c.Limits.Memory != 1<<30 {
		t.Errorf("requests %+v, limits %+v", c.Requests, c.Limits)
	}
	if r := s.Steps[1].Expect.Resources; r == nil || r.CpusetCpus != "2,3" || *r.CPUShares != 512 {
		t.Errorf("expected resources %+v", r)
	}
}

func TestParseKubeErrors(t *testing.T) {
	const steps = "steps: [{runPod: p}]\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown cgroup driver", "node: {cgroupDriver: systemdd}\npods: [{name: p}]\n" + steps,
			`s.yaml:1: node: unknown cgroupDriver "systemdd" (systemd or cgroupfs)`},
		{"no memory", "node: {memory: 0}\npods: [{name: p}]\n" + steps, "s.yaml:1: node: memory must be more than 0"},
		{"CPU request over limit", "pods: [{name: p}]\ncontainers:\n  - name: c\n    pod: p\n    requests: {cpu: 1500m}\n    limits: {cpu: \"1\"}\n" + steps,
			`s.yaml:5: container "c": CPU request 1500m is more than its limit 1`},
		{"memory request over limit", "pods: [{name: p}]\ncontainers:\n  - name: c\n    pod: p\n    requests: {memory: 1Gi}\n    limits: {memory: 512Mi}\n" + steps,
			`s.yaml:5: container "c": memory request 1Gi is more than its limit 512Mi`},
		{"bad CPU", "pods: [{name: p}]\ncontainers: [{name: c, pod: p, limits: {cpu: 1.5m}}]\n" + steps,
			`s.yaml:2: invalid CPU quantity "1.5m"`},
		{"unknown resource", "pods: [{name: p}]\ncontainers: [{name: c, pod: p, limits: {gpu: 1}}]\n" + steps,
			`s.yaml:2: unknown key "gpu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestParseCPUQuantity(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "250m": 250, "1": 1000, "2": 2000, "0.5": 500, "1.25": 1250, "0.001": 1, "1000000": 1e9, "1000000000m": 1e9} {
		if got, err := ParseCPUQuantity(in); err != nil || got != want {
			t.Errorf("ParseCPUQuantity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "m", "1.5m", "0.0001", ".5", "1e3", "1000001", "1000000.5", "1000000001m", "2 cpus"} {
		if got, err := ParseCPUQuantity(in); err == nil {
			t.Errorf("ParseCPUQuantity(%q) = %d, want an error", in, got)
		}
	}
}

func TestQuantityStrings(t *testing.T) {
	for q, want := range map[CPUQuantity]string{0: "0", 250: "250m", 2000: "2", 1500: "1500m"} {
		if got := q.String(); got != want {
			t.Errorf("CPUQuantity(%d) = %q, want %q", int64(q), got, want)
		}
	}
	for q, want := range map[Quantity]string{0: "0", 512: "512", 1 << 10: "1Ki", 1536 << 20: "1536Mi", 2 << 30: "2Gi", 1e9: "1000000000"} {
		if got := q.String(); got != want {
			t.Errorf("Quantity(%d) = %q, want %q", int64(q), got, want)
		}
	}
}
