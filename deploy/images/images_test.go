package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestBuildReproducible builds two plugin images twice, into different
// directories, and checks that both builds give the same digests and the
// same tarball bytes, and what each image holds.
func TestBuildReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugin binaries")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	opts := func(out string) Options {
		return Options{
			Go:       "go", // go test puts its own GOROOT/bin first in PATH
			Root:     root,
			Out:      out,
			Repo:     "example.test/nrikit/",
			Version:  "v1.2.3+test",
			Source:   "https://example.test/nrikit",
			Licenses: "Apache-2.0",
			Vendor:   "nrikit",
			Created:  time.Unix(1700000000, 0).UTC(),
			Arch:     runtime.GOARCH,
			Only:     []string{"logger", "template"},
			Log:      t.Output(),
		}
	}
	ctx := t.Context()
	o := opts(t.TempDir())
	first, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build(ctx, opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || len(second) != 2 {
		t.Fatalf("built %d and %d images, want 2 each", len(first), len(second))
	}
	for i, a := range first {
		b := second[i]
		if a.Name != b.Name || a.Digest != b.Digest {
			t.Errorf("image %d: %s %s, then %s %s", i, a.Name, a.Digest, b.Name, b.Digest)
		}
		if fileSum(t, a.Path) != fileSum(t, b.Path) {
			t.Errorf("%s: the two tarballs differ", a.Name)
		}
		t.Logf("%s %s %d bytes", a.Ref, a.Digest, a.Size)
		t.Run(a.Name, func(t *testing.T) {
			checkImage(t, a, o, "example.test/nrikit/"+a.Name+":v1.2.3-test", map[string]string{
				"org.opencontainers.image.source":   "https://example.test/nrikit",
				"org.opencontainers.image.version":  "v1.2.3+test",
				"org.opencontainers.image.licenses": "Apache-2.0",
				"org.opencontainers.image.title":    "nrikit " + a.Name,
				"org.opencontainers.image.created":  "2023-11-14T22:13:20Z",
			})
		})
	}
}

// checkImage reads a tarball back as an OCI layout and checks its index,
// manifest, config and layer.
func checkImage(t *testing.T, r Result, o Options, wantRef string, wantLabels map[string]string) {
	dir := t.TempDir()
	untar(t, r.Path, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	_, tag, _ := strings.Cut(wantRef[strings.LastIndex(wantRef, "/"):], ":")
	if r.Ref != wantRef || desc.Annotations[containerdImageName] != wantRef || desc.Annotations[refName] != tag {
		t.Errorf("ref %q, index annotations %v, want %s", r.Ref, desc.Annotations, wantRef)
	}
	if desc.Digest != r.Digest || desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index entry %s %s, want %s %s", desc.MediaType, desc.Digest, types.OCIManifestSchema1, r.Digest)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != o.Arch {
		t.Errorf("index platform %v, want linux/%s", desc.Platform, o.Arch)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("invalid image: %v", err)
	}

	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(m.Annotations, wantLabels) {
		t.Errorf("manifest annotations %v, want %v", m.Annotations, wantLabels)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cf.Config.Labels, wantLabels) {
		t.Errorf("config labels %v, want %v", cf.Config.Labels, wantLabels)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/" + r.Name}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/%s] and none", cf.Config.Entrypoint, cf.Config.Cmd, r.Name)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if !cf.Created.Equal(o.Created) || cf.OS != "linux" || cf.Architecture != o.Arch {
		t.Errorf("created %v on %s/%s, want %v on linux/%s", cf.Created, cf.OS, cf.Architecture, o.Created, o.Arch)
	}
	for _, h := range cf.History {
		if !h.Created.Equal(o.Created) {
			t.Errorf("history entry created %v, want %v", h.Created, o.Created)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, err := layers[0].MediaType(); err != nil || mt != types.OCILayer {
		t.Errorf("layer media type %s (%v), want %s", mt, err, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	checkLayer(t, tar.NewReader(rc), r.Name, o.Created)
}

// checkLayer checks that the layer holds the static binary and the base
// files only, owned by root, with the fixed time.
func checkLayer(t *testing.T, tr *tar.Reader, name string, mtime time.Time) {
	want := []string{"etc/", "etc/group", "etc/passwd", "tmp/", name}
	var got []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, hdr.Name)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" || !hdr.ModTime.Equal(mtime) {
			t.Errorf("%s: owner %d:%d (%q:%q), time %v; want 0:0 and %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname, hdr.ModTime, mtime)
		}
		if hdr.Name == "etc/passwd" {
			body, _ := io.ReadAll(tr)
			if !bytes.Contains(body, []byte("nonroot:x:65532:65532:")) {
				t.Errorf("etc/passwd has no nonroot user:\n%s", body)
			}
		}
		if hdr.Name != name {
			continue
		}
		if hdr.Mode != 0o755 || hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: mode %o type %c, want a 755 regular file", name, hdr.Mode, hdr.Typeflag)
		}
		prog, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		checkStatic(t, name, prog)
	}
	if !slices.Equal(got, want) {
		t.Errorf("layer holds %q, want %q", got, want)
	}
}

// checkStatic checks that prog is a stripped, statically linked Linux ELF
// executable: no interpreter, no shared libraries, no symbol table.
func checkStatic(t *testing.T, name string, prog []byte) {
	f, err := elf.NewFile(bytes.NewReader(prog))
	if err != nil {
		t.Fatalf("%s: not an ELF file: %v", name, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: dynamically linked (program header %v)", name, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s: needs shared libraries %v", name, libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s: not stripped (has .symtab)", name)
	}
}

func TestImageTag(t *testing.T) {
	for _, tc := range []struct{ version, tag string }{
		{"dev", "dev"},
		{"80d8a9f", "80d8a9f"},
		{"v0.1.0-3-g80d8a9f", "v0.1.0-3-g80d8a9f"},
		{"v1.2.3+meta", "v1.2.3-meta"},
		{"", ""},
		{"-x", ""},
		{"a/b", ""},
	} {
		tag, err := imageTag(tc.version)
		if tag != tc.tag || (err != nil) != (tc.tag == "") {
			t.Errorf("imageTag(%q) = %q, %v; want %q", tc.version, tag, err, tc.tag)
		}
	}
}

func TestSourceDate(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Time
		ok   bool
	}{
		{"", time.Unix(0, 0).UTC(), true},
		{"1700000000", time.Unix(1700000000, 0).UTC(), true},
		{"-1", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		got, err := sourceDate(tc.env)
		if !got.Equal(tc.want) || (err == nil) != tc.ok {
			t.Errorf("sourceDate(%q) = %v, %v; want %v (ok %v)", tc.env, got, err, tc.want, tc.ok)
		}
	}
}

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !filepath.IsLocal(hdr.Name) {
			t.Fatalf("tarball entry %q escapes the layout", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildOutOfTree builds the image of a plugin kept in a module of its
// own, outside the nrikit repository, as deploy/images/README.md says.
func TestBuildOutOfTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	mod := filepath.Join(t.TempDir(), "myplugin")
	for name, content := range map[string]string{
		"go.mod":  "module example.test/myplugin\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"my plugin\") }\n",
	} {
		if err := os.MkdirAll(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	o := Options{
		Go: "go", Root: mod, Packages: []string{"."}, Out: t.TempDir(), Repo: "registry.example.test/team",
		Version: "v0.1.0", Source: "https://example.test/myplugin", Licenses: "MIT", Created: time.Unix(0, 0).UTC(),
		Arch: runtime.GOARCH, Log: io.MultiWriter(t.Output(), &log),
	}
	results, err := Build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	// It says what it does: a first build is long.
	for _, want := range []string{"images: compiling myplugin for linux/" + runtime.GOARCH, "images: compiled in ", "images: wrote " + filepath.Join(o.Out, "myplugin.tar")} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	if len(results) != 1 || results[0].Name != "myplugin" || results[0].Ref != "registry.example.test/team/myplugin:v0.1.0" ||
		filepath.Base(results[0].Path) != "myplugin.tar" {
		t.Fatalf("built %+v", results)
	}
	checkImage(t, results[0], o, "registry.example.test/team/myplugin:v0.1.0", map[string]string{
		"org.opencontainers.image.source":   "https://example.test/myplugin",
		"org.opencontainers.image.version":  "v0.1.0",
		"org.opencontainers.image.licenses": "MIT",
		"org.opencontainers.image.title":    "myplugin",
		"org.opencontainers.image.created":  "1970-01-01T00:00:00Z",
	})

	o.Packages = []string{"./nothing-here/..."}
	if _, err := Build(t.Context(), o); err == nil {
		t.Error("a pattern without main packages built images")
	}
}

// TestProgress checks that a long step is reported every interval until
// it is stopped, and not after.
func TestProgress(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
	stop := progress(w, "still compiling", time.Now(), time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := strings.Count(buf.String(), "still compiling (")
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress lines within a minute")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	mu.Lock()
	after := buf.Len()
	mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() != after {
		t.Errorf("progress written after stop:\n%s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
