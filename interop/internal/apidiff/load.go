package apidiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// loadPackages type-checks, from source, the packages paths resolved
// from the module in dir, as built for env's
// platform, and returns those that build there, by import path, and why
// the others do not.
// Declarations only: function bodies are not checked, so no package is
// compiled and a cold build cache costs nothing.
func loadPackages(dir string, env []string, paths []string) (map[string]*types.Package, map[string]error, error) {
	args := append([]string{"list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,ImportMap,Error,DepsErrors"}, paths...)
	out, err := goCmd(dir, append(env, "CGO_ENABLED=0"), args...)
	if err != nil {
		return nil, nil, err
	}
	var goarch string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GOARCH="); ok {
			goarch = v
		}
	}
	fset := token.NewFileSet()
	checked := map[string]*types.Package{"unsafe": types.Unsafe}
	broken := map[string]error{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decoding go list's output: %w", err)
		}
		switch {
		case p.ImportPath == "unsafe":
		case p.Error != nil:
			broken[p.ImportPath] = errors.New(p.Error.Err)
		case len(p.DepsErrors) > 0:
			broken[p.ImportPath] = errors.New(p.DepsErrors[0].Err)
		default:
			pkg, err := p.check(fset, goarch, checked)
			if err != nil {
				broken[p.ImportPath] = err
				continue
			}
			checked[p.ImportPath] = pkg
		}
	}
	pkgs, errs := map[string]*types.Package{}, map[string]error{}
	for _, path := range paths {
		if p, ok := checked[path]; ok {
			pkgs[path] = p
		} else if err, ok := broken[path]; ok {
			errs[path] = err
		} else {
			errs[path] = errors.New("not listed")
		}
	}
	return pkgs, errs, nil
}

// listedPackage is what go list tells of a package.
type listedPackage struct {
	ImportPath, Dir string
	GoFiles         []string
	ImportMap       map[string]string
	Error           *struct{ Err string }
	DepsErrors      []*struct{ Err string }
}

// check type-checks the package's declarations; its imports are in
// checked (go list -deps lists dependencies first).
func (p *listedPackage) check(fset *token.FileSet, goarch string, checked map[string]*types.Package) (*types.Package, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p.ImportPath, err)
		}
		files = append(files, f)
	}
	var firstErr error
	conf := types.Config{
		IgnoreFuncBodies: true,
		Sizes:            types.SizesFor("gc", goarch),
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if mapped, ok := p.ImportMap[path]; ok {
				path = mapped
			}
			if pkg, ok := checked[path]; ok {
				return pkg, nil
			}
			return nil, fmt.Errorf("%s: import %s not checked", p.ImportPath, path)
		}),
		Error: func(err error) {
			if firstErr == nil {
				firstErr = err
			}
		},
	}
	pkg, _ := conf.Check(p.ImportPath, fset, files, nil)
	if firstErr != nil {
		return nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, firstErr)
	}
	return pkg, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// goCmd runs the go command in dir with env added and returns its
// standard output.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
