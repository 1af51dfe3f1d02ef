package manifests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// readmeSection is the section of README.md that takes a plugin of one's
// own, kept outside the repository, from the template to a DaemonSet.
const readmeSection = "## Your own plugin, outside this repository"

// recipe is readmeSection as a user follows it: sh blocks of command
// lines, and yaml blocks of files, each named by its first line
// ("# ~/src/batchenv/batch.yaml"), in the README's order.
type recipe []recipeBlock

// recipeBlock is a block of commands, or a file to write.
type recipeBlock struct {
	commands []recipeLine
	file     string // the file's path (with ~), for a file
	content  string
}

// recipeLine is one command line and the exit status its comment
// documents ("# exit status 1: ..."; 0 if it says none).
type recipeLine struct {
	line   string
	status int
}

var exitComment = regexp.MustCompile(`#.*\bexit status (\d+)`)

// readRecipe reads readmeSection's blocks from README.md.
func readRecipe(t *testing.T) recipe {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pluginsDir, "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+readmeSection+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", readmeSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var r recipe
	for rest := section; ; {
		_, after, ok := strings.Cut(rest, "```")
		if !ok {
			break
		}
		lang, after, _ := strings.Cut(after, "\n")
		body, next, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatalf("README.md: an unterminated block in %q", readmeSection)
		}
		rest = next
		switch lang {
		case "sh":
			var b recipeBlock
			for _, l := range strings.Split(body, "\n") {
				if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				rl := recipeLine{line: l}
				if m := exitComment.FindStringSubmatch(l); m != nil {
					rl.status, _ = strconv.Atoi(m[1])
				}
				b.commands = append(b.commands, rl)
			}
			r = append(r, b)
		case "yaml":
			first, _, _ := strings.Cut(body, "\n")
			name, ok := strings.CutPrefix(first, "# ")
			if !ok || !strings.HasPrefix(name, "~/") {
				t.Fatalf("README.md: a yaml block of %q does not start with its file's name (# ~/...): %q", readmeSection, first)
			}
			r = append(r, recipeBlock{file: strings.Fields(name)[0], content: body})
		default:
			t.Fatalf("README.md: a block of %q is %q, neither sh nor yaml", readmeSection, lang)
		}
	}
	return r
}

// outcome is what a command line of the recipe did.
type outcome struct {
	status int
	output string
}

// kubectlEnv makes the test binary `kubectl kustomize DIR` (see
// TestKubectlHelper): the recipe renders its overlay with it.
const kubectlEnv = "NRIKIT_TEST_KUBECTL"

// TestKubectlHelper is not a test: it is the kubectl of the recipe of
// TestPluginOutsideRepository, which knows `kubectl kustomize DIR` only
// and renders DIR with kustomize's library, as kubectl does.
func TestKubectlHelper(t *testing.T) {
	if os.Getenv(kubectlEnv) == "" {
		t.Skip("the kubectl of TestPluginOutsideRepository")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if len(args) != 2 || args[0] != "kustomize" {
		fmt.Fprintf(os.Stderr, "kubectl (test stand-in): only `kubectl kustomize DIR`, not %q\n", args)
		os.Exit(2)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), args[1])
	if err == nil {
		var out []byte
		if out, err = m.AsYaml(); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestPluginOutsideRepository follows README.md's "Your own plugin,
// outside this repository" as written, in a new home directory: the
// checkout is the repository under test (git clone is the one line not
// run), a new module copies the template and depends on it with a
// replace, its plugin passes nri check plugin, nri run under the
// section's policy refuses one of its changes (marked refused in the
// text and the JSON, with the exit status the section documents), its
// image is built, and its overlay renders a DaemonSet of that image
// whose arguments and probes the plugin serves.
func TestPluginOutsideRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nri, a plugin module and its image")
	}
	steps := readRecipe(t)
	repo := repoRoot(t)
	home := stableHome(t, repo)
	env := recipeEnv(t, home)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	outcomes := map[string]outcome{}
	dir := home
	for _, b := range steps {
		if b.file != "" {
			path := filepath.Join(home, strings.TrimPrefix(b.file, "~/"))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, c := range b.commands {
			if strings.HasPrefix(c.line, "git clone ") {
				// The checkout: the repository under test (no network).
				if !strings.Contains(c.line, " ~/src/nrikit") {
					t.Fatalf("README.md clones nrikit elsewhere than ~/src/nrikit: %q", c.line)
				}
				continue
			}
			o := runLine(ctx, t, env, &dir, c.line)
			t.Logf("$ %s\n(exit status %d)\n%s", c.line, o.status, o.output)
			if o.status != c.status {
				t.Fatalf("%q: exit status %d, README.md says %d:\n%s", c.line, o.status, c.status, o.output)
			}
			command, _, _ := strings.Cut(c.line, " #")
			outcomes[strings.TrimSpace(command)] = o
		}
	}
	checkOutcomes(t, home, outcomes)
}

// stableHome returns a new home directory for the recipe at a path that
// depends on the repository's only, and its src/nrikit, the repository:
// the packages built there have the same paths at every run, so that the
// build cache serves them.
func stableHome(t *testing.T, repo string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(repo))
	home := filepath.Join(os.TempDir(), "nrikit-outside-"+hex.EncodeToString(sum[:6]))
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Symlink(repo, filepath.Join(home, "src", "nrikit")); err != nil {
		t.Fatal(err)
	}
	return home
}

// recipeEnv is the recipe's environment: HOME the new home, nri
// installed into its bin (on PATH), the test binary as kubectl, and the
// go command's caches the machine's (GOFLAGS=-trimpath and
// CGO_ENABLED=0, as the other builds of this module and deploy/images,
// so that the cache serves the packages they built).
func recipeEnv(t *testing.T, home string) []string {
	t.Helper()
	goCmd := goCommand()
	var caches []string
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command(goCmd, "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		caches = append(caches, v+"="+strings.TrimSpace(string(out)))
	}
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := fmt.Sprintf("#!/bin/sh\nexec %s -test.run='^TestKubectlHelper$' -- \"$@\"\n", exe)
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	goDir := filepath.Dir(goCmd)
	if !filepath.IsAbs(goCmd) {
		if p, err := exec.LookPath(goCmd); err == nil {
			goDir = filepath.Dir(p)
		}
	}
	env := []string{"HOME=" + home, "GOBIN=" + bin, "PATH=" + bin + ":" + goDir + ":/usr/local/bin:/usr/bin:/bin",
		"GOFLAGS=-trimpath", "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", kubectlEnv + "=1", "NO_COLOR=1"}
	for _, v := range []string{"TMPDIR", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GONOSUMCHECK", "GOSUMDB"} {
		if val, ok := os.LookupEnv(v); ok {
			env = append(env, v+"="+val)
		}
	}
	return append(env, caches...)
}

// pwdMarker precedes the working directory a command line ends in, in
// its output (see runLine).
const pwdMarker = "\n@@nrikit-pwd@@ "

// runLine runs one command line with bash in *dir, as typed into a shell
// whose working directory carries over; *dir becomes the directory the
// line ends in.
func runLine(ctx context.Context, t *testing.T, env []string, dir *string, line string) outcome {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-c", line+"\nstatus=$?\nprintf '\\n@@nrikit-pwd@@ %s\\n' \"$PWD\" >&2\nexit $status")
	cmd.Dir, cmd.Env = *dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q: %v\n%s", line, ctx.Err(), out.String())
	}
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	text := out.String()
	if i := strings.LastIndex(text, pwdMarker); i >= 0 {
		*dir = strings.TrimSpace(text[i+len(pwdMarker):])
		text = text[:i]
	}
	return outcome{status: status, output: text}
}

// checkOutcomes checks what the recipe's lines did, as README.md says;
// outcomes are by command line without its comment, and a line is found
// by the whole command or, if no command is that, its unique prefix.
func checkOutcomes(t *testing.T, home string, outcomes map[string]outcome) {
	t.Helper()
	find := func(prefix string) outcome {
		t.Helper()
		if o, ok := outcomes[prefix]; ok {
			return o
		}
		var found []outcome
		for command, o := range outcomes {
			if strings.HasPrefix(command, prefix+" ") {
				found = append(found, o)
			}
		}
		if len(found) != 1 {
			t.Fatalf("README.md's recipe has %d lines %q, want 1", len(found), prefix)
		}
		return found[0]
	}
	if o := find("nri check plugin ./50-batchenv"); !strings.Contains(o.output, "result: PASS") ||
		!strings.Contains(o.output, "PASS  valid name and index                                          -  50-batchenv") {
		t.Errorf("nri check plugin: no PASS of 50-batchenv:\n%s", o.output)
	}
	text := find("nri run batch.yaml --plugin ./50-batchenv").output
	for _, want := range []string{
		"refused  50-batchenv (none of its changes applied)",
		`annotations "template.nrikit.io/seen" denied: not granted (batch.yaml:9: grants[0] (no adjust.annotations))`,
		"+ annotations[template.nrikit.io/seen] = true  (refused)",
		"FAILED 1 of 5 steps did not go as expected",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("nri run's text lacks %q:\n%s", want, text)
		}
	}
	checkRefusedJSON(t, find("nri run batch.yaml --plugin ./50-batchenv --output json").output)

	if o := find("cd ~/src/nrikit/deploy/images && go run ."); !strings.Contains(o.output, "registry.example.com/team/batchenv:v0.1.0") {
		t.Errorf("the image build does not name the image:\n%s", o.output)
	}
	if _, err := os.Stat(filepath.Join(home, "src", "batchenv", ".images", "batchenv.tar")); err != nil {
		t.Errorf("no image tarball: %v", err)
	}
	ds, cm := renderedDaemonSet(t, find("cd ~/src/batchenv && kubectl kustomize deploy").output)
	if ds.Name != "nri-plugin-batchenv" || ds.Namespace != wantNamespace {
		t.Errorf("DaemonSet %s/%s, want %s/nri-plugin-batchenv", ds.Namespace, ds.Name, wantNamespace)
	}
	c := &ds.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.com/team/batchenv:v0.1.0" {
		t.Errorf("the DaemonSet runs %s, not the plugin's image", c.Image)
	}
	checkContract(t, filepath.Join(home, "bin", "nri"), filepath.Join(home, "src", "batchenv", "50-batchenv"), c, cm)
}

// checkRefusedJSON checks the JSON report of the run the policy refused:
// not ok, the plugin's call refused with the violation.
func checkRefusedJSON(t *testing.T, out string) {
	t.Helper()
	var rep struct {
		OK     bool `json:"ok"`
		Events []struct {
			Calls []struct {
				Plugin     string `json:"plugin"`
				Refused    bool   `json:"refused"`
				Violations []struct {
					Field, Value, Rule, Action string
				} `json:"violations"`
			} `json:"calls"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("nri run --output json: %v\n%s", err, out)
	}
	found := false
	for _, e := range rep.Events {
		for _, c := range e.Calls {
			if c.Refused && c.Plugin == "50-batchenv" && len(c.Violations) == 1 && c.Violations[0].Field == "annotations" &&
				c.Violations[0].Rule == "batch.yaml:9: grants[0] (no adjust.annotations)" && c.Violations[0].Action == "refused" {
				found = true
			}
		}
	}
	if rep.OK || !found {
		t.Errorf("the JSON report: ok %v, a refused call of 50-batchenv with its violation: %v\n%s", rep.OK, found, out)
	}
}

// renderedDaemonSet decodes kubectl kustomize's output: the DaemonSet and
// its ConfigMaps.
func renderedDaemonSet(t *testing.T, out string) (*appsv1.DaemonSet, *Rendered) {
	t.Helper()
	r := &Rendered{ConfigMaps: map[string]*corev1.ConfigMap{}}
	var ds *appsv1.DaemonSet
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta struct{ Kind string }
		if err := DecodeStrict([]byte(doc), &meta); err != nil && !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("kubectl kustomize's output: %v\n%s", err, out)
		}
		switch meta.Kind {
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			if err := DecodeStrict([]byte(doc), ds); err != nil {
				t.Fatal(err)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := DecodeStrict([]byte(doc), &cm); err != nil {
				t.Fatal(err)
			}
			r.ConfigMaps[cm.Name] = &cm
		}
	}
	if ds == nil {
		t.Fatalf("no DaemonSet in kubectl kustomize's output:\n%s", out)
	}
	return ds, r
}

// checkContract starts the plugin binary as the DaemonSet's container
// would (its arguments and environment as the kubelet resolves them,
// the metrics on a free port), against nri (the recipe's) serving the
// socket as the node's runtime: the plugin must take the arguments,
// register, and serve the DaemonSet's probes, /readyz and /livez, with
// 200.
func checkContract(t *testing.T, nri, binary string, c *corev1.Container, r *Rendered) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sockDir, err := os.MkdirTemp("", "nri-outside")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "nri.sock")
	var serveOut bytes.Buffer
	serve := exec.CommandContext(ctx, nri, "serve", "--socket", socket, "--wait-plugins", "1", "--timeout", "90s", "--keep")
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nri serve made no socket:\n%s", serveOut.String())
		}
	}

	env := containerEnv(t, c, r)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	argv := expandArgs(t, c.Args, env)
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "-socket":
			argv[i+1] = socket
		case "-metrics-addr":
			argv[i+1] = addr
		case "-config":
			argv[i+1] = overlayConfig(t, r)
		}
	}
	cmd := exec.CommandContext(ctx, binary, argv...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		path := probe.HTTPGet.Path
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			rsp, err := client.Get("http://" + addr + path)
			if err == nil {
				rsp.Body.Close()
				if rsp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("the plugin %q does not answer %s with 200 (%v):\n%s\nnri serve:\n%s", argv, path, err, out.String(), serveOut.String())
			}
		}
	}
	if strings.Contains(out.String(), "flag provided but not defined") {
		t.Errorf("the plugin refuses the DaemonSet's arguments %q:\n%s", argv, out.String())
	}
}
