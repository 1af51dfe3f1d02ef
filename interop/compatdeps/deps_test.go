package compatdeps

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/semver"

	"github.com/nrikit/nrikit/interop/internal/consumer"
)

// adopter is testdata/adopter's module: its requirements are nri-plugins
// v0.14.0 topology-aware's for the modules compared (OpenTelemetry,
// Prometheus, protobuf, grpc, genproto), upstream NRI v0.12.5, and
// upstream's differ plugin's sters/yaml-diff, which brings the old
// genproto module into the graph.
func adopter(t *testing.T) consumer.Module {
	src, err := os.ReadFile(filepath.Join("testdata", "adopter", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	return consumer.Module{
		Path: "example.com/adopter",
		Require: map[string]string{
			"github.com/containerd/nri":                 "v0.12.5",
			"github.com/prometheus/client_golang":       "v1.23.2",
			"go.opentelemetry.io/otel":                  "v1.44.0",
			"go.opentelemetry.io/otel/sdk":              "v1.44.0",
			"google.golang.org/grpc":                    "v1.81.1",
			"google.golang.org/protobuf":                "v1.36.11",
			"google.golang.org/genproto/googleapis/rpc": "v0.0.0-20260526163538-3dc84a4a5aaa",
			"github.com/sters/yaml-diff":                "v0.4.0",
		},
		Files: map[string]string{"main.go": string(src)},
	}
}

// compared are the module families whose versions adopting compat must
// not raise beyond upstream's, unless nrikit's own code uses the module.
var compared = []string{"go.opentelemetry.io/", "github.com/prometheus/", "google.golang.org/protobuf", "google.golang.org/genproto"}

// flavourResult is what one flavour of the adopter came to.
type flavourResult struct {
	versions map[string]string
	output   string // what the adopter printed at start
	err      error
}

// TestAdopterDependencies builds testdata/adopter on upstream v0.12.5 and
// on compat/nri (go mod tidy, with the module proxy only, then go build)
// and runs it. Both flavours must tidy (compat's used to fail with
// "ambiguous import" on genproto, its stub's tests importing cel-go), and
// start: build their OpenTelemetry resource, which fails with
// "conflicting Schema URL" when adopting compat raises the SDK (nrikit's
// go.mod required OpenTelemetry v1.46 for one test). In the compared
// families, compat's graph may select a newer version than upstream's
// only for a module nrikit's own (non-test) code uses; every difference
// is logged.
func TestAdopterDependencies(t *testing.T) {
	root, err := consumer.Root()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	mod := adopter(t)
	dir := t.TempDir()
	results := map[consumer.Flavor]*flavourResult{}
	var wg sync.WaitGroup
	for _, f := range consumer.Flavors {
		r := &flavourResult{}
		results[f] = r
		wg.Go(func() { *r = buildAndRun(ctx, mod, filepath.Join(dir, string(f)), root, f) })
	}
	used, err := nrikitModules(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, f := range consumer.Flavors {
		if r := results[f]; r.err != nil {
			t.Fatalf("%s: %v", f, r.err)
		}
		t.Logf("%s: %s", f, results[f].output)
	}
	up, cp := results[consumer.Upstream].versions, results[consumer.Compat].versions
	for _, m := range sortedModules(up, cp) {
		u, c := up[m], cp[m]
		switch {
		case u == c:
		case u == "" || c == "":
			t.Logf("%s: %q on upstream, %q on compat (not in both graphs)", m, u, c)
		case semver.Compare(c, u) < 0:
			t.Logf("%s: %s on upstream, %s on compat (lower)", m, u, c)
		case used[m]:
			t.Logf("%s: raised from %s to %s: nrikit's own code uses it", m, u, c)
		default:
			t.Errorf("%s: raised from %s (upstream) to %s (compat), which only nrikit's tests or tools need", m, u, c)
		}
	}
}

// buildAndRun writes the adopter in flavour f into dir, tidies it, lists
// its module versions, builds it and runs it.
func buildAndRun(ctx context.Context, mod consumer.Module, dir, root string, f consumer.Flavor) flavourResult {
	if err := mod.Write(dir, root, f); err != nil {
		return flavourResult{err: err}
	}
	if _, err := consumer.Go(ctx, dir, nil, "mod", "tidy"); err != nil {
		return flavourResult{err: err}
	}
	vs, err := consumer.Versions(ctx, dir)
	if err != nil {
		return flavourResult{err: err}
	}
	bin := filepath.Join(dir, "adopter")
	if _, err := consumer.Go(ctx, dir, nil, "build", "-o", bin, "."); err != nil {
		return flavourResult{err: err}
	}
	out, err := consumer.Run(ctx, bin)
	if err != nil {
		return flavourResult{err: err}
	}
	return flavourResult{versions: vs, output: strings.TrimSpace(out)}
}

// nrikitModules returns the modules whose packages nrikit's and
// compat/nri's non-test code imports.
func nrikitModules(ctx context.Context, root string) (map[string]bool, error) {
	used := map[string]bool{}
	for _, dir := range []string{root, filepath.Join(root, "compat", "nri")} {
		out, err := consumer.Go(ctx, dir, nil, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./...")
		if err != nil {
			return nil, err
		}
		for _, m := range strings.Fields(out) {
			used[m] = true
		}
	}
	return used, nil
}

// sortedModules lists the modules of the compared families in either
// graph.
func sortedModules(graphs ...map[string]string) []string {
	set := map[string]bool{}
	for _, g := range graphs {
		for m := range g {
			for _, prefix := range compared {
				if strings.HasPrefix(m, prefix) {
					set[m] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}
