package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The suite's images, as named in containerd's image store.
const (
	// PauseImage is the pod sandbox image: containerd's pinned sandbox
	// image, so it is never pulled.
	PauseImage = "localhost/nrikit-pause:1"
	// WorkloadImage is the test containers' image.
	WorkloadImage = "localhost/nrikit-workload:1"
)

// Image is one single-binary image: an empty base with the static
// program Binary at /Name, which is the entrypoint.
type Image struct {
	// Ref is the image's name, e.g. PauseImage.
	Ref string
	// Binary is the path of the static program on the host.
	Binary string
	// Name is the program's path in the image, from its root.
	Name string
	// Links are more paths in the image, from its root, made symbolic
	// links to /Name (a multi-call program's applets, as busybox's).
	Links []string
	// Path is the image's PATH ("/" if empty).
	Path string
	// StopSignal is the image's stop signal ("" for the runtime's
	// default, SIGTERM).
	StopSignal string
}

// Pause is the pod sandbox image, with the suite's pause program at
// binDir/pause. Its stop signal is SIGKILL: a sandbox has nothing to
// clean up, and containerd kills its sandboxes so anyway. CRI-O stops a
// sandbox it has just started when a plugin refuses RunPodSandbox, and on
// SIGTERM waited out the CRI call's whole deadline for a pause process
// that did not go (likely: the Go program is its pod's PID 1, and the
// kernel drops a signal a PID namespace's init has no handler for yet).
func Pause(binDir string) Image {
	return Image{Ref: PauseImage, Binary: filepath.Join(binDir, "pause"), Name: "pause", StopSignal: "SIGKILL"}
}

// WriteImages writes images into one OCI image layout tarball at path,
// each manifest annotated with io.containerd.image.name so that
// `ctr images import` names it.
func WriteImages(path string, images ...Image) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	for _, im := range images {
		img, err := singleBinaryImage(im, platform)
		if err != nil {
			return fmt.Errorf("image %s: %w", im.Ref, err)
		}
		// The ref.name is the whole reference, not only the tag: CRI-O's
		// copyimg selects an image of the archive by it.
		if err := lp.AppendImage(img, layout.WithPlatform(platform), layout.WithAnnotations(map[string]string{
			annotationImageName: im.Ref,
			annotationRefName:   im.Ref,
		})); err != nil {
			return fmt.Errorf("image %s: %w", im.Ref, err)
		}
	}
	return tarDir(dir, path)
}

func singleBinaryImage(im Image, platform v1.Platform) (v1.Image, error) {
	prog, err := os.ReadFile(im.Binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"dev/", "proc/", "sys/", "etc/", "tmp/"}
	for _, p := range append([]string{im.Name}, im.Links...) {
		if d := path.Dir(p); d != "." && !slices.Contains(dirs, d+"/") {
			dirs = append(dirs, d+"/")
		}
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: im.Name, Mode: 0o755, Size: int64(len(prog))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(prog); err != nil {
		return nil, err
	}
	for _, l := range im.Links {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: "/" + im.Name, Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = platform.OS, platform.Architecture
	cf.Config.Entrypoint = []string{"/" + im.Name}
	cf.Config.Env = []string{"PATH=/"}
	if im.Path != "" {
		cf.Config.Env = []string{"PATH=" + im.Path}
	}
	cf.Config.StopSignal = im.StopSignal
	return mutate.ConfigFile(img, cf)
}

// tarDir writes the tree under dir as a tar file at path.
func tarDir(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// GoBuild is a `go build` of main packages into a directory.
type GoBuild struct {
	// Go is the go command.
	Go string
	// Dir is the module directory the build runs in.
	Dir string
	// Out is the directory the binaries go to, one per package, named
	// after the package's directory.
	Out string
	// Env is added to the environment (e.g. CGO_ENABLED=0 for the
	// images' static programs).
	Env []string
	// Flags are extra build flags (e.g. -ldflags=...).
	Flags []string
	// Packages are the packages to build.
	Packages []string
}

// Run builds the packages into Out, with -trimpath (the binaries and the
// packages compiled for them do not depend on where the clone is),
// copying the go command's output to log.
//
// A binary is linked once per content, not once per run: it is copied
// from the go command's cache of executables, which `go run` fills and
// keys like its other build outputs (by every input of the link: the
// sources and versions of all the packages linked, flags, environment
// and toolchain). So the suites of one `make test` (and later runs on
// the same machine) share each binary instead of each linking its own
// (containerd alone takes 12 to 30 s to link). A build that cache does
// not serve (a -buildmode in Flags, such as a WASM module's, or no
// cache) is an ordinary `go build -o`.
func (b GoBuild) Run(ctx context.Context, log io.Writer) error {
	if err := os.MkdirAll(b.Out, 0o755); err != nil {
		return err
	}
	if !slices.ContainsFunc(b.Flags, func(f string) bool { return strings.HasPrefix(f, "-buildmode") }) {
		echo, err := exec.LookPath("echo")
		if err == nil {
			// One package at a time: the first compiles what they share.
			for _, pkg := range b.Packages {
				if err := b.copyCached(ctx, log, echo, pkg); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return b.goCommand(ctx, log, append(append([]string{"build", "-trimpath", "-o", b.Out + "/"}, b.Flags...), b.Packages...)...)
}

// copyCached copies the executable of package pkg from the go command's
// cache into Out: `go run -exec echo` builds it into the cache (or finds
// it there) and, instead of running it, has echo print its path. A build
// that was not in the cache runs from a temporary copy, which is gone when
// go run exits: the second `go run` finds it in the cache.
func (b GoBuild) copyCached(ctx context.Context, log io.Writer, echo, pkg string) error {
	args := append(append([]string{"run", "-trimpath", "-exec", echo}, b.Flags...), pkg)
	for range 2 {
		var stdout bytes.Buffer
		if err := b.run(ctx, log, &stdout, args...); err != nil {
			return err
		}
		exe := strings.TrimSpace(stdout.String())
		if exe == "" || strings.ContainsAny(exe, "\n") {
			return fmt.Errorf("go %s in %s printed %q, not the path of an executable", strings.Join(args, " "), b.Dir, stdout.String())
		}
		if _, err := os.Stat(exe); err == nil {
			return copyExecutable(exe, filepath.Join(b.Out, filepath.Base(exe)))
		}
	}
	// Not cached (GOCACHE=off).
	return b.goCommand(ctx, log, append(append([]string{"build", "-trimpath", "-o", b.Out + "/"}, b.Flags...), pkg)...)
}

// goCommand runs the go command with args in Dir, its output to log.
func (b GoBuild) goCommand(ctx context.Context, log io.Writer, args ...string) error {
	return b.run(ctx, log, log, args...)
}

// run runs the go command with args in Dir, its standard output to
// stdout and its standard error to log.
func (b GoBuild) run(ctx context.Context, log, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, b.Go, args...)
	cmd.Dir = b.Dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), b.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, stdout), io.MultiWriter(&out, log)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), b.Dir, err, out.String())
	}
	return nil
}

// copyExecutable copies the executable src to dst (mode 0755), through
// a temporary file renamed into place.
func copyExecutable(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
