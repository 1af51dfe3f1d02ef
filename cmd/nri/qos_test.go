package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// qosExample is the example scenario of pods of each QoS class and a
// resource-policy plugin.
var qosExample = filepath.Join("examples", "qos.yaml")

// TestQOSExampleNeedsThePlugin plays the example without its policy: the
// resources it expects the policy to set are missing, each named, and
// those kubelet's formulas give hold. (TestDocumentedCommandLines plays
// the example with its policy: every expectation holds.)
func TestQOSExampleNeedsThePlugin(t *testing.T) {
	path := exampleWithout(t, qosExample, "plugins:\n", "steps:\n")
	r := nri(t, "run", path)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (expectations failed)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`step 2 (createContainer postgres): the container's spec lacks the expected annotations qos-pin.nrikit.dev/class=Guaranteed; resources cpusetCpus=2,3 (spec: "")`,
		`step 4 (createContainer nginx): the container's spec lacks the expected annotations qos-pin.nrikit.dev/class=Burstable; resources cpusetCpus=0-1 (spec: "")`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// kubelet's values are the simulator's, not the plugin's: they hold.
	if strings.Contains(r.stdout, "cpuShares=") || strings.Contains(r.stdout, "memoryLimit=") {
		t.Errorf("kubelet's shares or memory limits reported missing:\n%s", r.stdout)
	}
}
