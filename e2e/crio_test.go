package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// crioNRIImage is the image CRI-O's NRI suite runs its containers from;
// it pulls the image unless an image of that name is there. The suite
// loads its own: Debian's static busybox with its applets.
const crioNRIImage = "quay.io/crio/fedora-crio-ci:latest"

// writeBusyboxImage writes an image named ref (CRI-O's NRI suite's is
// crioNRIImage): busybox at /bin/busybox and every applet it lists linked
// to it in /bin (sh, sleep, grep, stat and the others the suite's
// containers run).
func writeBusyboxImage(ctx context.Context, path, busybox, ref string) error {
	out, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	var links []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if a := strings.TrimSpace(sc.Text()); a != "" && a != "busybox" && !strings.Contains(a, "/") {
			links = append(links, "bin/"+a)
		}
	}
	return harness.WriteImages(path, harness.Image{Ref: ref, Binary: busybox, Name: "bin/busybox", Links: links, Path: "/bin"})
}

// requireCrio skips t unless the runtime under test is CRI-O.
func requireCrio(t *testing.T) {
	t.Helper()
	if !suite.crio {
		t.Skipf("the runtime under test is containerd; %s=crio runs this test", criEnv)
	}
}

// crioNRITests are the tests of CRI-O v1.36.3's test/nri.
var crioNRITests = []string{
	"TestPluginRegistration", "TestPluginSynchronization", "TestPodEvents", "TestContainerEvents",
	"TestMountInjection", "TestEnvironmentInjection", "TestAnnotationInjection", "TestDeviceInjection",
	"TestCpusetAdjustment", "TestMemsetAdjustment", "TestCpusetAdjustmentUpdate", "TestMemsetAdjustmentUpdate",
}

var testResult = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\w+) \(`)

// TestCrioNRISuite runs CRI-O's own NRI suite (test/nri, its plugins on
// the NRI stub of the build: upstream's as released, compat/nri's on
// nrikit) against this CRI-O. Its pods have their own network namespace,
// so CRI-O gets a CNI bridge inside its private network namespace, and its
// image is the local busybox image under the name it would pull. Every
// test must pass, or be skipped for a reason of the machine (one NUMA
// node: no memset tests).
func TestCrioNRISuite(t *testing.T) {
	requireCrio(t)
	r := newRuntime(t, harness.Options{PodNetwork: true, ExtraImageTars: []string{suite.busyboxTar}})
	r.start()
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.tools.Crio.NRITest, "-test.v", "-test.count=1", "-test.timeout=9m",
		"-crio-socket", "unix://"+r.Address, "-nri-socket", r.NRISocket, "-cgroup-manager", "cgroupfs")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	results := map[string]string{}
	counts := map[string]int{}
	var skips []string
	for _, line := range strings.Split(string(out), "\n") {
		m := testResult.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		results[m[2]] = m[1]
		counts[m[1]]++
		if m[1] == "SKIP" {
			skips = append(skips, m[2])
		}
	}
	if t.Failed() || err != nil || counts["FAIL"] > 0 {
		t.Logf("CRI-O's test/nri output:\n%s", out)
	}
	if err != nil && counts["FAIL"] == 0 {
		t.Fatalf("CRI-O's test/nri: %v", err)
	}
	for _, name := range crioNRITests {
		switch results[name] {
		case "PASS":
		case "SKIP":
			if !strings.Contains(name, "Memset") {
				t.Errorf("%s was skipped", name)
			}
		case "":
			t.Errorf("%s did not run", name)
		default:
			t.Errorf("%s: %s", name, results[name])
		}
	}
	slices.Sort(skips)
	evidence(t, "CRI-O's test/nri on %s: %d passed, %d failed, %d skipped %v (%d tests)", nriName(), counts["PASS"], counts["FAIL"], counts["SKIP"], skips, len(results))
}

// nriName names the NRI inside the runtime under test.
func nriName() string {
	if suite.nrikit {
		return "nrikit's NRI (compat/nri)"
	}
	return "upstream's NRI"
}

// runtimeKind names the runtime under test.
func runtimeKind() string {
	if suite.crio {
		return "CRI-O"
	}
	return "containerd"
}

// nriRuntimeName is the runtime's name in NRI's Configure request.
func nriRuntimeName() string {
	if suite.crio {
		return "cri-o"
	}
	return "containerd"
}
