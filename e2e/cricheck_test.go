package e2e

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// criCheckImage is the image of the checker's containers: busybox, for
// sleep and for cat inside them.
const criCheckImage = "localhost/nri-check-busybox:1"

// criCheckRequestTimeout is the NRI request timeout of the runtime under
// check: the checker holds hooks for up to this less 750 ms, long enough
// for its CRI calls meanwhile on a busy machine.
const criCheckRequestTimeout = 5 * time.Second

// criCheckCDIDevice is the CDI device the run injects; its spec sets an
// environment variable.
const criCheckCDIDevice = "nrikit.dev/check=dev0"

// knownFailure is a check a runtime build fails, with the upstream issue
// (or the finding) it matches and a part of the failure's reason.
type knownFailure struct {
	check, reason, issue string
}

// criKnownFailures are the checks each build fails (docs/conformance.md
// has the table): key "containerd" or "CRI-O", with "/nrikit" for the
// build on nrikit. Any other failure fails the test, and so does a known
// failure that passes (the table must say what is true).
var criKnownFailures = map[string][]knownFailure{
	"containerd": {
		{"Stop/Remove errors: teardown goes on, all told", "the later plugin got none", stopErrorsIssue},
		{"CreateContainer answer evicts a container", "still CONTAINER_RUNNING", "upstream's library drops evictions (new finding)"},
		{"unsolicited eviction stops the container", "still CONTAINER_RUNNING", "upstream's library drops evictions (new finding)"},
	},
	"containerd/nrikit": {
		// containerd's NRI integration, written for upstream's API, has no
		// way to take evictions outside an event's answer: compat/nri says so.
		{"unsolicited eviction stops the container", "evictions refused: the runtime takes evictions only in answers to events", "containerd's CRI layer (upstream's UpdateFn carries no evictions)"},
	},
	// CRI-O's CRI layer decides each of these: the same on upstream's NRI.
	"CRI-O/nrikit": criOLayerFailures,
	// NRI v0.11.0 inside CRI-O as released adds its own: what v0.12.0
	// fixed or added, and upstream's Stop error handling.
	"CRI-O": append([]knownFailure{
		{"rejects an invalid plugin name with a reason", "RegisterPlugin succeeded", "NRI v0.11.0 checks no plugin name (containerd/nri 91a7760, in v0.12.0)"},
		{"Stop/Remove errors: teardown goes on, all told", "the later plugin got none", stopErrorsIssue},
		{"adjusted memory policy reaches the container", "memoryPolicy", "NRI v0.11.0 has no memory policy adjustment (containerd/nri#166, in v0.12.0)"},
		{"adjusted sysctl reaches the container", "stopped answering CRI", "NRI v0.11.0 panics on a sysctl adjustment (containerd/nri#261, in v0.12.0)"},
		{"adjusted seccomp policy reaches the container", "stopped answering CRI", "NRI v0.11.0 panics on a seccomp policy with an errno (containerd/nri#276, in v0.12.0)"},
	}, criOLayerFailures...),
}

// stopErrorsIssue is why a runtime on upstream's NRI fails the check of
// Stop/Remove errors.
const stopErrorsIssue = "upstream's library returns at a plugin's first error to a Stop or Remove event, the later plugins untold (containerd/nri#286 writes down that they must be told)"

// criOLayerFailures are the checks CRI-O v1.36.3 fails whatever NRI
// library it embeds.
var criOLayerFailures = []knownFailure{
	{"container events: order and contents", `container name ""`, "cri-o#10011 (the name comes from the kubelet's label); PostStartContainer sends state CONTAINER_CREATED (new finding)"},
	{"StopPodSandbox held: network namespace intact", "network namespace", "cri-o#9905"},
	{"UpdatePodSandboxResources reaches the plugin", "no PostUpdatePodSandbox", "CRI-O never sends PostUpdatePodSandbox (new finding)"},
	{"CreateContainer answer evicts a container", "still CONTAINER_RUNNING", "CRI-O applies no evictions of CreateContainer answers"},
	{"unsolicited eviction stops the container", "evict", "CRI-O's NRI integration takes no evictions outside an event's answer"},
}

// criBuild names the runtime build under test.
func criBuild() string {
	b := "containerd"
	if suite.crio {
		b = "CRI-O"
	}
	if suite.nrikit {
		b += "/nrikit"
	}
	return b
}

// criReport is `nri check runtime --output json`.
type criReport struct {
	Failed  bool        `json:"failed"`
	Results []criResult `json:"results"`
}

// criResult is one result of criReport.
type criResult struct {
	Name          string        `json:"name"`
	Passed        bool          `json:"passed"`
	Skipped       bool          `json:"skipped"`
	Informational bool          `json:"informational"`
	Reason        string        `json:"reason"`
	Duration      time.Duration `json:"duration_ns"`
}

// criCrashing are the IDs of the checks that crash a build: they run
// last, each on its own, so that the others can run.
var criCrashing = map[string][]string{
	// NRI v0.11.0 panics on a sysctl adjustment (fixed by
	// containerd/nri#261) and on a seccomp policy with an errno
	// (containerd/nri#276), both in v0.12.0.
	"CRI-O": {"adjust-sysctl", "adjust-seccomp-policy"},
}

// criCheckCommand is the containers' command: busybox's shell, which
// exits at once on SIGTERM (sleep as the first process would not, and
// CRI-O gives a container the whole remaining deadline of StopPodSandbox
// to stop).
const criCheckCommand = "sh,-c,trap 'exit 0' TERM; sleep 3600 & wait"

// runCRICheck runs `nri check runtime --cri-socket` against r with the
// suite's flags and args, and returns its JSON report.
func runCRICheck(t *testing.T, r *runtime, args ...string) *criReport {
	t.Helper()
	cmd := exec.CommandContext(r.ctx, filepath.Join(suite.bin, "nri"), append([]string{"check", "runtime", "--socket", r.NRISocket,
		"--cri-socket", r.Address, "--image", criCheckImage, "--command", criCheckCommand, "--pod-network",
		"--cdi-device", criCheckCDIDevice, "--output", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 6:
	case err != nil:
		t.Fatalf("nri check runtime: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("nri check runtime %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	var rep criReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("nri check runtime --output json: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	return &rep
}

// TestCheckRuntimeCRI runs the whole `nri check runtime --cri-socket`
// against the runtime build under test, once: pods with their own network
// (a CNI bridge), the default validator on (required plugins), a CDI
// device, busybox as the image, a sample plugin already connected as on a
// node. Every check must pass or be skipped for what the machine lacks,
// except the build's known failures (criKnownFailures), each matched with
// its issue; the JUnit report must hold every result.
func TestCheckRuntimeCRI(t *testing.T) {
	start := time.Now()
	busybox, err := harness.EnsureCheckPackages(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(t.TempDir(), "busybox.tar")
	if err := writeBusyboxImage(t.Context(), tar, busybox, criCheckImage); err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, harness.Options{PodNetwork: true, DefaultValidator: &harness.Validator{},
		RequestTimeout: criCheckRequestTimeout, ExtraImageTars: []string{tar}})
	writeFile(t, filepath.Join(r.CDIDir, "nri-check.json"),
		`{"cdiVersion":"0.6.0","kind":"nrikit.dev/check","devices":[{"name":"dev0","containerEdits":{"env":["NRI_CHECK_CDI=dev0"]}}]}`)
	r.start()
	logger := r.samplePlugin("logger", "10")
	ready := time.Since(start)

	junit := filepath.Join(t.TempDir(), "junit.xml")
	crashing := criCrashing[criBuild()]
	args := []string{"--junit", junit}
	if len(crashing) > 0 {
		args = append(args, "--skip", "^("+strings.Join(crashing, "|")+")$")
	}
	checkStart := time.Now()
	rep := runCRICheck(t, r, args...)
	took := time.Since(checkStart)
	checkJUnit(t, junit, rep)
	if done, code := logger.Exited(); done {
		t.Errorf("the logger plugin, connected before the check, exited (status %d) during it:\n%s", code, logger.Log())
	}
	// The checks that crash this build run last, each on its own, the
	// runtime started again after each.
	for _, id := range crashing {
		crash := runCRICheck(t, r, "--run", "^"+id+"$")
		for _, res := range crash.Results {
			if res.Name != "leaves no pod or container behind" && !slices.ContainsFunc(rep.Results, func(x criResult) bool { return x.Name == res.Name }) {
				rep.Results = append(rep.Results, res)
			}
		}
		// The daemon may take a moment to die after its panic.
		if harness.Eventually(r.ctx, 10*time.Second, func() error {
			if r.Running() {
				return errors.New("still running")
			}
			return nil
		}) == nil {
			evidence(t, "%s: the check %s crashed the runtime; log tail:\n%s", criBuild(), id, r.LogTail(25))
			if err := r.Restart(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	known := map[string]knownFailure{}
	for _, k := range criKnownFailures[criBuild()] {
		known[k.check] = k
	}
	var lines []string
	passed, failed, skipped := 0, 0, 0
	for _, res := range rep.Results {
		mark := "PASS"
		switch {
		case res.Skipped:
			mark = "SKIP"
			skipped++
		case res.Informational:
			mark = "INFO"
		case !res.Passed:
			mark = "FAIL"
			failed++
		default:
			passed++
		}
		lines = append(lines, fmt.Sprintf("%s  %-52s %8s  %s", mark, res.Name, res.Duration.Round(time.Millisecond), res.Reason))
		k, isKnown := known[res.Name]
		switch {
		case mark == "FAIL" && !isKnown:
			t.Errorf("%s fails on %s: %s", res.Name, criBuild(), res.Reason)
		case mark == "FAIL" && !strings.Contains(res.Reason, k.reason):
			t.Errorf("%s fails on %s as known (%s), but not saying %q: %s", res.Name, criBuild(), k.issue, k.reason, res.Reason)
		case mark == "FAIL":
			evidence(t, "%s: FAIL %s (%s): %s", criBuild(), res.Name, k.issue, res.Reason)
		case isKnown:
			t.Errorf("%s is known to fail on %s (%s), but %s: %s", res.Name, criBuild(), k.issue, mark, res.Reason)
		}
		if res.Name == "no container lost around Synchronize" {
			evidence(t, "%s: %s %s: %s", criBuild(), mark, res.Name, res.Reason)
		}
	}
	t.Logf("nri check runtime --cri-socket against %s:\n%s", criBuild(), strings.Join(lines, "\n"))
	evidence(t, "nri check runtime --cri-socket against %s: %d checks, %d passed, %d failed, %d skipped; the checker took %s, the test %s (runtime ready after %s)",
		criBuild(), len(rep.Results), passed, failed, skipped, took.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), ready.Round(100*time.Millisecond))
	checkConformanceTable(t, criBuild(), rep.Results)
}

// checkJUnit reads the JUnit report back: one test case per result of
// rep, the failures and skips counted.
func checkJUnit(t *testing.T, path string, rep *criReport) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("JUnit report: %v", err)
	}
	failures, skipped := 0, 0
	for _, res := range rep.Results {
		switch {
		case res.Skipped:
			skipped++
		case !res.Passed:
			failures++
		}
	}
	if got.Tests != len(rep.Results) || got.Failures != failures || got.Skipped != skipped {
		t.Errorf("JUnit report: %d tests, %d failures, %d skipped; want %d, %d, %d", got.Tests, got.Failures, got.Skipped, len(rep.Results), failures, skipped)
	}
}

// conformanceDoc is the page with the table of results per build.
const conformanceDoc = "../docs/conformance.md"

// checkConformanceTable checks that docs/conformance.md's table of results
// has a row for every result and no other, and that its column for build
// marks FAIL exactly the build's known failures (which the results were
// just checked against): the page says what the suite finds.
func checkConformanceTable(t *testing.T, build string, results []criResult) {
	t.Helper()
	b, err := os.ReadFile(conformanceDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conformanceTable(string(b), build)
	if err != nil {
		t.Fatalf("%s: %v", conformanceDoc, err)
	}
	for _, res := range results {
		if _, ok := rows[res.Name]; !ok {
			t.Errorf("%s: the table of results has no row %q", conformanceDoc, res.Name)
		}
	}
	for name, cell := range rows {
		if !slices.ContainsFunc(results, func(r criResult) bool { return r.Name == name }) {
			t.Errorf("%s: the table of results has a row %q, which is no check of nri check runtime", conformanceDoc, name)
		}
		known := slices.ContainsFunc(criKnownFailures[build], func(k knownFailure) bool { return k.check == name })
		switch documented := strings.HasPrefix(cell, "FAIL"); {
		case documented && !known:
			t.Errorf("%s: %q is %q for %s in the table, but it is none of the build's known failures", conformanceDoc, name, cell, build)
		case !documented && known:
			t.Errorf("%s: %q is %q for %s in the table, but it is one of the build's known failures", conformanceDoc, name, cell, build)
		}
	}
}

// conformanceTable reads the table of results from the page: its rows by
// check name, each with its cell in the column headed build.
func conformanceTable(page, build string) (map[string]string, error) {
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	lines := strings.Split(page, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| check |") })
	if start < 0 {
		return nil, errors.New(`no table of results (a line starting "| check |")`)
	}
	col := slices.Index(cells(lines[start]), "`"+build+"`")
	if col < 0 {
		return nil, fmt.Errorf("the table of results has no column `%s`", build)
	}
	rows := map[string]string{}
	for _, l := range lines[start+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		c := cells(l)
		if len(c) <= col {
			return nil, fmt.Errorf("row %q has no column `%s`", c[0], build)
		}
		rows[c[0]] = c[col]
	}
	return rows, nil
}
