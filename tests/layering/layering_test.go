package layering

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the main module's root, relative to this package.
const repoRoot = "../.."

// libraries are the main module's library trees, relative to its root.
var libraries = []string{"api", "stub", "adaptation", "merge", "filter", "validator", "policy", "identity", "ocispec", "conformance", "record"}

// pluginImports are what the sample plugins' code (tests aside) may
// import of this module.
var pluginImports = []string{"api", "stub", "ocispec", "record", "internal/yamldoc", "plugins"}

// goFile is one Go file of the main module: its package directory (slash
// separated, relative to the module root; "." for the root), whether it is
// a test file, and the imports of this module in it, relative to the
// module path.
type goFile struct {
	name    string
	dir     string
	test    bool
	imports []string
}

// TestLayering checks every Go file of the main module against the rules
// of the package documentation.
func TestLayering(t *testing.T) {
	files := moduleFiles(t, repoRoot)
	if len(files) < 100 {
		t.Fatalf("found %d Go files in the main module; is %s its root?", len(files), repoRoot)
	}
	for _, v := range violations(files) {
		t.Error(v)
	}
}

// TestRulesCatchUpwardImports feeds the rules the arrows that issue 24
// found pointing up, and ones of each other kind, so that a rule that
// stopped matching fails here.
func TestRulesCatchUpwardImports(t *testing.T) {
	bad := []goFile{
		{name: "internal/simulator/simulator.go", dir: "internal/simulator", imports: []string{"adaptation"}},
		{name: "internal/pluginmain/pluginmain.go", dir: "internal/pluginmain", imports: []string{"stub"}},
		{name: "internal/chaos/frozen_test.go", dir: "internal/chaos", test: true, imports: []string{"adaptation"}},
		{name: "internal/report/report.go", dir: "internal/report", imports: []string{"ocispec"}},
		{name: "adaptation/launch.go", dir: "adaptation", imports: []string{"internal/testing/testscale"}},
		{name: "stub/stub.go", dir: "stub", imports: []string{"plugins/internal/allow"}},
		{name: "conformance/plugin.go", dir: "conformance", imports: []string{"cmd/nri/internal/report"}},
		{name: "cmd/nri/main_test.go", dir: "cmd/nri", test: true, imports: []string{"tests/chaos"}},
		{name: "policy/check.go", dir: "policy", imports: []string{"plugins/internal/allow"}},
		{name: "internal/testing/nodepolicy/nodepolicy.go", dir: "internal/testing/nodepolicy", imports: []string{"plugins/logger"}},
		{name: "internal/testing/nodepolicy/nodepolicy.go", dir: "internal/testing/nodepolicy", imports: []string{"cmd/nri/internal/report"}},
		{name: "internal/wasmhost/host.go", dir: "internal/wasmhost", imports: []string{"policy"}},
		{name: "plugins/template/plugin.go", dir: "plugins/template", imports: []string{"policy"}},
		{name: "plugins/logger/logger.go", dir: "plugins/logger", imports: []string{"internal/httpserve"}},
		{name: "api/capability/capability.go", dir: "api/capability", imports: []string{"policy"}},
		{name: "stub/handler/handler.go", dir: "stub/handler", imports: []string{"stub/internal/core"}},
	}
	for _, f := range bad {
		if v := violations([]goFile{f}); len(v) != 1 {
			t.Errorf("%s importing %v: %d violations, want 1: %q", f.name, f.imports, len(v), v)
		}
	}
	good := []goFile{
		{name: "internal/wasmhost/plugin.go", dir: "internal/wasmhost", imports: []string{"api", "internal/wasmabi"}},
		{name: "internal/wasmhost/helpers_test.go", dir: "internal/wasmhost", test: true, imports: []string{"internal/testing/wasmtest"}},
		{name: "internal/testing/wasmtest/wasmtest.go", dir: "internal/testing/wasmtest", imports: []string{"internal/wasmbuild"}},
		{name: "adaptation/harness_test.go", dir: "adaptation", test: true, imports: []string{"stub", "internal/testing/testscale"}},
		{name: "cmd/nri/plugin.go", dir: "cmd/nri", imports: []string{"plugins/logger", "cmd/nri/internal/simulator"}},
		{name: "stub/stub_test.go", dir: "stub", test: true, imports: []string{"filter/celscope"}},
		{name: "internal/testing/nodepolicy/nodepolicy.go", dir: "internal/testing/nodepolicy", imports: []string{"api", "policy"}},
		{name: "plugins/template/plugin.go", dir: "plugins/template", imports: []string{"api/capability", "stub/stubmetrics", "plugins/internal/pluginmain"}},
		{name: "plugins/logger/policy_test.go", dir: "plugins/logger", test: true, imports: []string{"policy", "internal/testing/nodepolicy"}},
	}
	for _, f := range good {
		if v := violations([]goFile{f}); len(v) != 0 {
			t.Errorf("%s importing %v: %q, want no violation", f.name, f.imports, v)
		}
	}
}

// violations returns a line for every import of files that breaks a rule.
func violations(files []goFile) []string {
	var out []string
	for _, f := range files {
		for _, imp := range f.imports {
			if reason := check(f, imp); reason != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", f.name, imp, reason))
			}
		}
	}
	return out
}

// check returns why f may not import imp (a path of this module), or "".
func check(f goFile, imp string) string {
	switch {
	case under(f.dir, "internal/testing") && !under(imp, "internal") && !isLibrary(imp):
		return "a test helper under internal/testing/ imports only internal/ and the libraries"
	case under(f.dir, "internal") && !under(f.dir, "internal/testing") && !under(imp, "api") && !under(imp, "internal"):
		return "a package under internal/ imports only api and internal/"
	case under(imp, "internal/testing") && !f.test && !under(f.dir, "internal/testing"):
		return "only tests import the test helpers of internal/testing/"
	case under(imp, "tests"):
		return "the suites of tests/ are no one's dependency"
	case !f.test && under(f.dir, "api") && !under(imp, "api"):
		return "the protocol (api/) imports nothing of this module"
	case !f.test && under(f.dir, "stub/handler") && !under(imp, "api"):
		return "the handler interfaces (stub/handler) import only api: they are the process's and the WASM guest's"
	case !f.test && under(f.dir, "plugins") && !slices.ContainsFunc(pluginImports, func(p string) bool { return under(imp, p) }):
		return "a sample plugin imports only api, stub, ocispec, internal/yamldoc and plugins/"
	case !f.test && isLibrary(f.dir) && (under(imp, "cmd") || under(imp, "plugins")):
		return "a library imports nothing of the tool (cmd/) or the sample plugins (plugins/)"
	}
	return ""
}

// isLibrary reports whether the slash-separated path p is in one of the
// libraries.
func isLibrary(p string) bool {
	return slices.ContainsFunc(libraries, func(l string) bool { return under(p, l) })
}

// under reports whether the slash-separated path p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// moduleFiles returns the Go files of the module rooted at root, without
// those of nested modules, testdata and hidden or node_modules directories.
func moduleFiles(t *testing.T, root string) []goFile {
	t.Helper()
	modPath := modulePath(t, filepath.Join(root, "go.mod"))
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); rel != "." && err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		parsed, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		f := goFile{name: rel, dir: path.Dir(rel), test: strings.HasSuffix(rel, "_test.go")}
		for _, spec := range parsed.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if imp == modPath {
				f.imports = append(f.imports, ".")
			} else if rest, ok := strings.CutPrefix(imp, modPath+"/"); ok {
				f.imports = append(f.imports, rest)
			}
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// modulePath returns the module path declared by the go.mod file at p.
func modulePath(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatalf("%s declares no module (%v)", p, sc.Err())
	return ""
}
