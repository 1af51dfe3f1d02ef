package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api/capability"
)

const valid = `name: t
pods:
  - name: p1
    namespace: ns
    labels: {a: b}
  - name: p2
containers:
  - name: c1
    pod: p1
    image: img
    env: [A=1]
    resources: {cpuShares: 100, memoryLimit: 1Mi}
  - name: c1
    pod: p2
plugins:
  - name: logger
    index: "10"
    args: [-events=all]
steps:
  - runPod: p1
  - createContainer: p1/c1
  - updateContainer: p1/c1
    resources: {memoryLimit: 2Gi}
  - stopContainer: p1/c1
  - removeContainer: p1/c1
  - stopPod: p1
  - removePod: p1
`

func TestParseValid(t *testing.T) {
	s, err := Parse("v.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "t" || len(s.Pods) != 2 || len(s.Containers) != 2 || len(s.Steps) != 7 {
		t.Fatalf("decoded %+v", s)
	}
	p1, p2 := s.Pods[0], s.Pods[1]
	if p2.Namespace != "default" || p1.Namespace != "ns" {
		t.Errorf("namespaces %q %q", p1.Namespace, p2.Namespace)
	}
	if p1.ID == "" || p1.ID == p2.ID || p1.UID == "" || p1.UID == p2.UID {
		t.Errorf("derived IDs %q %q, UIDs %q %q", p1.ID, p2.ID, p1.UID, p2.UID)
	}
	if c0, c1 := s.Containers[0], s.Containers[1]; c0.ID == c1.ID {
		t.Errorf("containers of the same name in two pods share ID %q", c0.ID)
	}
	if got := int64(*s.Containers[0].Resources.MemoryLimit); got != 1<<20 {
		t.Errorf("memoryLimit = %d", got)
	}
	st := s.Steps[2]
	if st.Action != UpdateContainer || st.Container != s.Containers[0] || st.Pod != p1 || st.Line != 22 {
		t.Errorf("step 3: action %s container %v pod %v line %d", st.Action, st.Container, st.Pod, st.Line)
	}
	if got := int64(*st.Resources.MemoryLimit); got != 2<<30 {
		t.Errorf("update memoryLimit = %d", got)
	}
	if s.Plugins[0].FullName() != "10-logger" || s.Plugins[0].Line != 16 {
		t.Errorf("plugin %q at line %d", s.Plugins[0].FullName(), s.Plugins[0].Line)
	}
}

// TestRemoveCreatedContainer: a container created but never started is
// removed as it is, as a runtime removes it.
func TestRemoveCreatedContainer(t *testing.T) {
	const yaml = "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n  - removeContainer: c\n  - stopPod: p\n  - removePod: p\n"
	if _, err := Parse("s.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
}

// TestParseErrors checks that each mistake is reported with its file and
// line.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown pod", "pods: [{name: p}]\ncontainers:\n  - name: c1\n    pod: gpu\nsteps: [{runPod: p}]\n",
			`s.yaml:4: container "c1": unknown pod "gpu"`},
		{"unknown key", "pods:\n  - name: p\n    labls: {}\nsteps: [{runPod: p}]\n",
			`s.yaml:3: unknown key "labls" in pods[0] (did you mean "labels"?)`},
		{"unknown top-level key", "pod: []\nsteps: [{runPod: p}]\n", `s.yaml:1: unknown key "pod" at the top level (did you mean "pods"?)`},
		{"syntax", "pods: [\n", "s.yaml:"},
		{"duplicate key", "name: a\nname: b\nsteps: []\n", `s.yaml:2: mapping key "name" already defined at line 1`},
		{"wrong type", "pods: {name: p}\nsteps: [{runPod: p}]\n", "s.yaml:1: cannot unmarshal"},
		{"no steps", "pods: [{name: p}]\n", "s.yaml:1: no steps"},
		{"two actions", "pods: [{name: p}]\nsteps:\n  - {runPod: p, stopPod: p}\n", "s.yaml:3: step with several actions (runPod, stopPod)"},
		{"no action", "pods: [{name: p}]\nsteps:\n  - expectError: x\n", "s.yaml:3: step without an action"},
		{"unknown step pod", "steps:\n  - runPod: nope\n", `s.yaml:2: step runPod: unknown pod "nope"`},
		{"order", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - createContainer: c\n",
			`s.yaml:4: step 1 (createContainer c): pod "p" is not running`},
		{"stop with running container", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n  - stopPod: p\n",
			`s.yaml:6: step 3 (stopPod p): container "c" is still created: stop it first`},
		{"remove running container", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n  - startContainer: c\n  - removeContainer: c\n",
			`s.yaml:7: step 4 (removeContainer c): the container is running: stop it first`},
		{"ambiguous", "pods: [{name: a}, {name: b}]\ncontainers: [{name: c, pod: a}, {name: c, pod: b}]\nsteps:\n  - runPod: a\n  - createContainer: c\n",
			`s.yaml:5: step createContainer: container "c" is ambiguous: write one of a/c, b/c`},
		{"update without resources", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n  - updateContainer: c\n",
			"s.yaml:6: step updateContainer c: no resources"},
		{"bad quantity", "pods: [{name: p}]\ncontainers: [{name: c, pod: p, resources: {memoryLimit: 1Qi}}]\nsteps: [{runPod: p}]\n",
			`s.yaml:2: invalid quantity "1Qi"`},
		{"bad env", "pods: [{name: p}]\ncontainers:\n  - name: c\n    pod: p\n    env: [NOEQUALS]\nsteps: [{runPod: p}]\n",
			`s.yaml:5: container "c": environment entry "NOEQUALS" is not KEY=VALUE`},
		{"bad index", "plugins:\n  - name: x\n    index: 7\nsteps: []\n", `s.yaml:3: plugin "x":`},
		{"duplicate plugin", "plugins:\n  - {name: x, index: \"10\"}\n  - {name: x, index: \"10\"}\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:3: plugin "10-x" defined twice (first at line 2)`},
		{"escaping file", "plugins:\n  - name: x\n    index: \"10\"\n    files: {../x: y}\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:4: plugin "10-x": file "../x" must be a relative path`},
		{"policy rules", "policy:\n  - name: r\n    deny: [hooks]\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:2: policy: a policy of plugin grants (required:, grants:, default:; docs/policy.md), not the simulator's former policy rules`},
		{"policy mistake", "pods: [{name: p}]\npolicy:\n  grants:\n    - plugins: [x]\n      adjust: {evn: [A]}\nsteps: [{runPod: p}]\n",
			`s.yaml:5: policy: unknown key "evn"`},
		{"expectRefused not a plugin", "pods: [{name: p}]\nsteps:\n  - runPod: p\n    expectRefused: [ok, \"no way\"]\n",
			`s.yaml:4: step runPod p: expectRefused: "no way" is not a plugin name (NAME or IDX-NAME)`},
		{"expectRefused twice", "pods: [{name: p}]\nsteps:\n  - runPod: p\n    expectRefused:\n      - 10-x\n      - 10-x\n",
			`s.yaml:6: step runPod p: expectRefused names "10-x" twice`},
		{"validator not enabled", "defaultValidator:\n  rejectOCIHookAdjustment: true\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			"s.yaml:2: defaultValidator has rules but is not enabled"},
		{"two documents", "pods: [{name: p}]\nsteps: [{runPod: p}]\n---\nname: x\n", "s.yaml:3: a scenario file holds one YAML document"},
		{"wasm package with files", "plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: ./w\n    files: {a: b}\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:5: plugin "10-w": a WASM plugin (wasmPackage) takes no files`},
		{"wasm package with args", "plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: ./w\n    args: [-x]\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:5: plugin "10-w": a WASM plugin (wasmPackage) takes no args`},
		{"wasm package and path", "plugins:\n  - name: w\n    index: \"10\"\n    path: ./x\n    wasmPackage: ./w\npods: [{name: p}]\nsteps: [{runPod: p}]\n",
			`s.yaml:5: plugin "10-w": give path or wasmPackage, not both`},
		{"expect on a pod step", "pods: [{name: p}]\nsteps:\n  - runPod: p\n    expect: {env: [A=1]}\n",
			"s.yaml:4: step runPod: expect only goes with container steps"},
		{"expect with expectError", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n    expectError: x\n    expect: {env: [A=1]}\n",
			"s.yaml:7: step createContainer c: expect and expectError exclude each other"},
		{"empty expect", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n    expect: {}\n",
			"s.yaml:6: step createContainer c: expect checks nothing"},
		{"bad expected env", "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n    expect:\n      env: [A=1, B]\n",
			`s.yaml:7: step createContainer c: expected environment entry "B" is not KEY=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			var serr *Error
			if !errors.As(err, &serr) || serr.File != "s.yaml" {
				t.Errorf("error %v is not a *scenario.Error for s.yaml", err)
			}
		})
	}
}

func TestParseWASMAndExpect(t *testing.T) {
	text := "plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: ./w\n    config: x\n" +
		"pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n" +
		"    expect:\n      env: [A=1]\n      annotations: {k: v}\n"
	s, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Plugins[0]; p.WASMPackage != "./w" || p.Config != "x" {
		t.Errorf("plugin %+v", p)
	}
	e := s.Steps[1].Expect
	if e == nil || len(e.Env) != 1 || e.Env[0] != "A=1" || e.Annotations["k"] != "v" {
		t.Errorf("expect %+v", e)
	}
}

func TestExpectedFailureLeavesStateUnchanged(t *testing.T) {
	// The rejected creation does not count, so creating again is fine
	// and starting the rejected one is not.
	ok := "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n    expectError: no\n  - createContainer: c\n"
	if _, err := Parse("s.yaml", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	bad := "pods: [{name: p}]\ncontainers: [{name: c, pod: p}]\nsteps:\n  - runPod: p\n  - createContainer: c\n    expectError: no\n  - startContainer: c\n"
	if _, err := Parse("s.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "not created") {
		t.Fatalf("error %v, want the container to be not created", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "my-scenario.yaml")
	if err := os.WriteFile(path, []byte("pods: [{name: p}]\nsteps: [{runPod: p}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "my-scenario" || s.Dir != dir || s.File != path {
		t.Errorf("name %q dir %q file %q", s.Name, s.Dir, s.File)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("loading a missing file succeeded")
	}
}

func TestParseQuantity(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "1Ki": 1024, "512Mi": 512 << 20, "2Gi": 2 << 30, "1Ti": 1 << 40, "3k": 3000, "1M": 1e6, "2G": 2e9, "1T": 1e12} {
		if got, err := ParseQuantity(in); err != nil || got != want {
			t.Errorf("ParseQuantity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5Gi", "Gi", "9999999999Ti", "1 Mi x"} {
		if got, err := ParseQuantity(in); err == nil {
			t.Errorf("ParseQuantity(%q) = %d, want an error", in, got)
		}
	}
}

// TestPolicyLines checks that a scenario's policy cites the scenario
// file's own lines: its rules (which refusals name) and the line of its
// key.
func TestPolicyLines(t *testing.T) {
	sc, err := Parse("s.yaml", []byte("name: s\npods: [{name: p}]\n\npolicy: # grants\n  grants:\n    - plugins: [x]\n      adjust:\n        env: [A]\nsteps: [{runPod: p}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.PolicyLine != 4 {
		t.Errorf("PolicyLine = %d, want 4", sc.PolicyLine)
	}
	g := sc.CompiledPolicy.GrantFor("10", "x")
	if got, want := g.String(), "s.yaml:6: grants[0]"; got != want {
		t.Errorf("grant %q, want %q", got, want)
	}
	if got, want := g.Rule(capability.Env), "s.yaml:8: grants[0].adjust.env"; got != want {
		t.Errorf("rule %q, want %q", got, want)
	}
	// ExpectsRefusal knows a plugin by NAME or IDX-NAME.
	st := &Step{ExpectRefused: []string{"x", "20-y"}}
	for full, want := range map[string]bool{"10-x": true, "20-y": true, "30-y": false, "10-xx": false} {
		if st.ExpectsRefusal(full) != want {
			t.Errorf("ExpectsRefusal(%s) = %v, want %v", full, !want, want)
		}
	}
}
