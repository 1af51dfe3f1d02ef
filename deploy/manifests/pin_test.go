package manifests

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLayout writes a tarball shaped like deploy/images' (an OCI image
// layout whose index.json names one manifest) for the image ref, and
// returns the manifest's digest.
func writeLayout(t *testing.T, path, ref string) string {
	t.Helper()
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(ref)))
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []map[string]any{{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest, "size": 500,
			"annotations": map[string]string{containerdImageName: ref, "org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:]},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for name, data := range map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": index} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return digest
}

// copyTree copies the directory tree src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPinImages runs what `make pin-images` runs on images named as
// `make images IMAGE_REPO=ghcr.io/example VERSION=v1.2.3` names them: each
// release overlay's output then deploys REPO/NAME@DIGEST, and keeps its
// comments.
func TestPinImages(t *testing.T) {
	tree := t.TempDir()
	copyTree(t, kustomizeDir, tree)
	images := t.TempDir()
	names := overlays(t)
	digests := map[string]string{}
	for _, name := range names {
		digests[name] = writeLayout(t, filepath.Join(images, name+".tar"), "ghcr.io/example/"+name+":v1.2.3")
	}
	pinned, err := PinImages(filepath.Join(tree, "release"), images)
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned) != len(names) {
		t.Errorf("pinned %v, want %v", pinned, names)
	}
	for _, name := range names {
		want := "ghcr.io/example/" + name + "@" + digests[name]
		if got := pinned[name].Ref(); got != want {
			t.Errorf("%s: pinned %s, want %s", name, got, want)
		}
		r := render(t, filepath.Join(tree, "release", name))
		checkPinned(t, name, r)
		if got := r.DaemonSets[0].Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("%s: the release overlay deploys %s, want %s", name, got, want)
		}
		file, err := os.ReadFile(filepath.Join(tree, "release", name, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(file), "# The "+name+" overlay with its image pinned by digest") || !strings.Contains(string(file), "\n  - ../../overlays/"+name+"\n") {
			t.Errorf("%s: the pinned kustomization lost its comment or its layout:\n%s", name, file)
		}
	}

	// One plugin, by name; a second run gives the same file.
	before, _ := os.ReadFile(filepath.Join(tree, "release", "logger", "kustomization.yaml"))
	if _, err := PinImages(filepath.Join(tree, "release"), images, "logger"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(tree, "release", "logger", "kustomization.yaml"))
	if string(before) != string(after) {
		t.Errorf("pinning again changed the file:\n%s\n---\n%s", before, after)
	}
}

// TestPinImagesErrors: a missing tarball, another plugin's image, and a
// tarball that is not an image layout are errors naming the overlay.
func TestPinImagesErrors(t *testing.T) {
	tree := t.TempDir()
	copyTree(t, kustomizeDir, tree)
	images := t.TempDir()
	writeLayout(t, filepath.Join(images, "logger.tar"), "localhost/nrikit/differ:dev")
	if err := os.WriteFile(filepath.Join(images, "differ.tar"), []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"template": "run make images first",
		"logger":   "holds the image localhost/nrikit/differ, not a logger image",
		"differ":   "release overlay differ:",
	} {
		if _, err := PinImages(filepath.Join(tree, "release"), images, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
}
