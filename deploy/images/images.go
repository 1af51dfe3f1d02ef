package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user and group the plugins run as: distroless's "nonroot".
const (
	nonRootID = 65532
	userSpec  = "65532:65532"
)

// OCI annotation keys (image-spec annotations.md), used both as config
// labels and as manifest annotations.
const (
	labelSource   = "org.opencontainers.image.source"
	labelVersion  = "org.opencontainers.image.version"
	labelLicenses = "org.opencontainers.image.licenses"
	labelTitle    = "org.opencontainers.image.title"
	labelCreated  = "org.opencontainers.image.created"
	// refName is the tag in an OCI layout's index; containerdImageName is
	// the full name `ctr images import` gives the image.
	refName             = "org.opencontainers.image.ref.name"
	containerdImageName = "io.containerd.image.name"
)

// Options configure a build of plugin images.
type Options struct {
	// Go is the go command.
	Go string
	// Root is the directory of the Go module the plugins are built in:
	// the nrikit repository root, or the module of a plugin kept outside
	// it.
	Root string
	// Packages are the package patterns, relative to Root, whose main
	// packages are plugins (default DefaultPackages).
	Packages []string
	// Out is the directory the image tarballs go to, one NAME.tar each.
	Out string
	// Repo prefixes image names: Repo/NAME:Version.
	Repo string
	// Version is the images' version label and tag.
	Version string
	// Source is the source repository's URL label.
	Source string
	// Licenses is the licence label, an SPDX expression ("" for none).
	Licenses string
	// Vendor prefixes the title label: "VENDOR NAME" ("" for the name
	// alone).
	Vendor string
	// Created is the images' creation time and the layers' file times.
	Created time.Time
	// Arch is the GOARCH to build for (the OS is always linux).
	Arch string
	// Only restricts the build to these plugin names; empty means all.
	Only []string
	// Log receives the go command's output and Build's progress: what it
	// compiles, a line every ProgressInterval while the compiler runs (a
	// first build compiles every dependency: minutes), and each tarball
	// written.
	Log io.Writer
}

// DefaultPackages are the plugins of the nrikit repository: the sample
// plugins and the template.
var DefaultPackages = []string{"./plugins/..."}

// Plugin is a main package whose binary is a plugin.
type Plugin struct {
	// Name is the binary's and the image's name: the package's directory.
	Name string
	// Package is the import path.
	Package string
}

// Result is one written image tarball.
type Result struct {
	Name string
	// Ref is the image's name in the tarball (io.containerd.image.name).
	Ref string
	// Path is the tarball.
	Path string
	// Digest is the image manifest's digest.
	Digest v1.Hash
	// Size is the tarball's size in bytes.
	Size int64
}

// Discover lists the Go plugin binaries of the package patterns (default
// DefaultPackages: in the nrikit repository, each sample plugin's
// cmd/NAME and the template) in the module at root: every main package
// they match, named after its directory. Plugins not written in Go
// (js-env) have no Go package and are not listed.
func Discover(ctx context.Context, goCmd, root string, patterns ...string) ([]Plugin, error) {
	if len(patterns) == 0 {
		patterns = DefaultPackages
	}
	args := append([]string{"list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`}, patterns...)
	out, err := goCommand(ctx, goCmd, root, nil, io.Discard, args...)
	if err != nil {
		return nil, err
	}
	var plugins []Plugin
	for line := range strings.Lines(out) {
		pkg := strings.TrimSpace(line)
		if pkg == "" {
			continue
		}
		plugins = append(plugins, Plugin{Name: path.Base(pkg), Package: pkg})
	}
	slices.SortFunc(plugins, func(a, b Plugin) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(plugins); i++ {
		if plugins[i].Name == plugins[i-1].Name {
			return nil, fmt.Errorf("two plugin packages named %s: %s and %s", plugins[i].Name, plugins[i-1].Package, plugins[i].Package)
		}
	}
	if len(plugins) == 0 {
		return nil, fmt.Errorf("no main packages in %s matching %s", root, strings.Join(patterns, " "))
	}
	return plugins, nil
}

// Build compiles the plugins as static binaries and writes one OCI image
// layout tarball per plugin into o.Out.
func Build(ctx context.Context, o Options) ([]Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	tag, err := imageTag(o.Version)
	if err != nil {
		return nil, err
	}
	plugins, err := Discover(ctx, o.Go, o.Root, o.Packages...)
	if err != nil {
		return nil, err
	}
	if len(o.Only) > 0 {
		var picked []Plugin
		for _, name := range o.Only {
			i := slices.IndexFunc(plugins, func(p Plugin) bool { return p.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("no plugin %q among the main packages of %s", name, o.Root)
			}
			picked = append(picked, plugins[i])
		}
		plugins = picked
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	bin, err := os.MkdirTemp("", "nrikit-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)

	// One go build for all: static, no paths or VCS stamps, stripped.
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", bin + "/"}
	for _, p := range plugins {
		args = append(args, p.Package)
	}
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + o.Arch}
	names := make([]string, len(plugins))
	for i, p := range plugins {
		names[i] = p.Name
	}
	fmt.Fprintf(o.Log, "images: compiling %s for linux/%s (static; a first build compiles every dependency and takes minutes)\n",
		strings.Join(names, ", "), o.Arch)
	start := time.Now()
	stop := progress(o.Log, "images: still compiling", start, ProgressInterval)
	_, err = goCommand(ctx, o.Go, o.Root, env, o.Log, args...)
	stop()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "images: compiled in %s\n", time.Since(start).Round(time.Second))

	results := make([]Result, 0, len(plugins))
	for _, p := range plugins {
		ref := strings.TrimSuffix(o.Repo, "/") + "/" + p.Name + ":" + tag
		img, err := pluginImage(p.Name, filepath.Join(bin, p.Name), o)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", p.Name, err)
		}
		dst := filepath.Join(o.Out, p.Name+".tar")
		if err := writeLayoutTarball(img, ref, tag, o, dst); err != nil {
			return nil, fmt.Errorf("image %s: %w", p.Name, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(dst)
		if err != nil {
			return nil, err
		}
		results = append(results, Result{Name: p.Name, Ref: ref, Path: dst, Digest: digest, Size: fi.Size()})
		fmt.Fprintf(o.Log, "images: wrote %s (%s)\n", dst, ref)
	}
	return results, nil
}

// ProgressInterval is how often Build says it is still compiling.
const ProgressInterval = 30 * time.Second

// progress writes "what (ELAPSED)" to log every interval since start
// until the returned function is called, which waits for the writer to
// stop.
func progress(log io.Writer, what string, start time.Time, interval time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(log, "%s (%s)\n", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// tagPattern is a valid image tag (distribution's reference grammar).
var tagPattern = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)

// imageTag makes a version usable as a tag: a semver build suffix's "+"
// becomes "-".
func imageTag(version string) (string, error) {
	tag := strings.ReplaceAll(version, "+", "-")
	if !tagPattern.MatchString(tag) {
		return "", fmt.Errorf("version %q is not usable as an image tag", version)
	}
	return tag, nil
}

// pluginImage is an empty base plus one layer holding the static binary at
// /NAME, the entrypoint, run as the non-root user.
func pluginImage(name, binary string, o Options) (v1.Image, error) {
	data, err := pluginLayer(name, binary, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "nrikit deploy/images: static binary /" + name},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	labels := imageLabels(name, o)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + name},
		User:       userSpec,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

func imageLabels(name string, o Options) map[string]string {
	labels := map[string]string{
		labelSource:  o.Source,
		labelVersion: o.Version,
		labelTitle:   strings.TrimSpace(o.Vendor + " " + name),
		labelCreated: o.Created.UTC().Format(time.RFC3339),
	}
	if o.Licenses != "" {
		labels[labelLicenses] = o.Licenses
	}
	if o.Source == "" {
		delete(labels, labelSource)
	}
	return labels
}

// layerFile is one entry of a plugin layer other than the binary.
type layerFile struct {
	name string
	mode int64
	body string // directories have none
}

// baseFiles is what the static binary gets besides itself: user and group
// entries for root and nonroot (so lookups of the running user work) and a
// writable /tmp.
var baseFiles = []layerFile{
	{name: "etc/", mode: 0o755},
	{name: "etc/group", mode: 0o644, body: "root:x:0:\nnonroot:x:65532:\n"},
	{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	{name: "tmp/", mode: 0o1777},
}

// pluginLayer is the uncompressed layer tar: fixed order, times and
// ownership (root), so the same binary always gives the same bytes.
func pluginLayer(name, binary string, mtime time.Time) ([]byte, error) {
	prog, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(hdr *tar.Header, body []byte) error {
		hdr.ModTime, hdr.Format = mtime.UTC(), tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, f := range baseFiles {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		if strings.HasSuffix(f.name, "/") {
			hdr.Typeflag = tar.TypeDir
		}
		if err := write(hdr, []byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := write(&tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(prog))}, prog); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeLayoutTarball writes img as an OCI image layout holding one image,
// named for `ctr images import`, tarred deterministically to dst.
func writeLayoutTarball(img v1.Image, ref, tag string, o Options, dst string) error {
	dir, err := os.MkdirTemp(filepath.Dir(dst), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendImage(img,
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: o.Arch}),
		layout.WithAnnotations(map[string]string{containerdImageName: ref, refName: tag}),
	); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := tarDir(dir, tmp, o.Created); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// tarDir tars the tree under dir to path in lexical order, every entry
// owned by root with mode 0644 (files) or 0755 (directories) and time mtime.
func tarDir(dir, path string, mtime time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Name, hdr.Typeflag, hdr.Mode = hdr.Name+"/", tar.TypeDir, 0o755
			return tw.WriteHeader(hdr)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	return errors.Join(err, tw.Close())
}

// goCommand runs the go command in dir (outside any workspace) and returns
// its standard output.
func goCommand(ctx context.Context, goCmd, dir string, env []string, log io.Writer, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, log)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return stdout.String(), nil
}
