package manifests

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// DevImageRepo is the image name prefix of the overlays under
// kustomize/overlays: localhost/nrikit/NAME:dev, as `make images
// VERSION=dev` names the images.
const DevImageRepo = "localhost/nrikit/"

// containerdImageName is the index annotation deploy/images writes the
// image's full name (REPO/NAME:VERSION) in, for `ctr images import`.
const containerdImageName = "io.containerd.image.name"

// digestRE is an OCI sha256 digest.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// maxIndexSize bounds the index.json read from an image tarball.
const maxIndexSize = 1 << 20

// Image is a plugin image built by deploy/images.
type Image struct {
	// Name is the image's name without its tag, such as
	// ghcr.io/nrikit/logger.
	Name string
	// Digest is the digest of its manifest, sha256:HEX: what a registry
	// it is pushed to, and containerd after `ctr images import`, know it
	// by.
	Digest string
}

// Ref returns NAME@DIGEST.
func (i Image) Ref() string { return i.Name + "@" + i.Digest }

// ReadImage reads the name and manifest digest of the image in an OCI
// image layout tarball written by deploy/images (`make images`): the one
// manifest of its index.json, named by its io.containerd.image.name
// annotation.
func ReadImage(tarball string) (Image, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return Image{}, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return Image{}, fmt.Errorf("%s: no index.json: not an OCI image layout", tarball)
		}
		if err != nil {
			return Image{}, fmt.Errorf("%s: %w", tarball, err)
		}
		if path.Clean(hdr.Name) != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxIndexSize+1))
		if err != nil {
			return Image{}, fmt.Errorf("%s: index.json: %w", tarball, err)
		}
		if len(data) > maxIndexSize {
			return Image{}, fmt.Errorf("%s: index.json is larger than %d bytes", tarball, maxIndexSize)
		}
		if err := json.Unmarshal(data, &index); err != nil {
			return Image{}, fmt.Errorf("%s: index.json: %w", tarball, err)
		}
		if len(index.Manifests) != 1 {
			return Image{}, fmt.Errorf("%s: index.json lists %d manifests, want 1", tarball, len(index.Manifests))
		}
		m := index.Manifests[0]
		if !digestRE.MatchString(m.Digest) {
			return Image{}, fmt.Errorf("%s: manifest digest %q is not sha256:HEX", tarball, m.Digest)
		}
		name := m.Annotations[containerdImageName]
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
			name = name[:i] // without the tag
		}
		if name == "" {
			return Image{}, fmt.Errorf("%s: the manifest has no %s annotation", tarball, containerdImageName)
		}
		return Image{Name: name, Digest: m.Digest}, nil
	}
}

// PinImages writes, in the kustomization of every release overlay
// RELEASE/NAME (or of those named), the name and digest of the image
// IMAGES/NAME.tar that `make images` built: the images entry for the dev
// overlay's image, localhost/nrikit/NAME, gets newName and digest. It
// returns the images it pinned, by plugin name. Comments and the rest of
// each file are kept.
func PinImages(releaseDir, imagesDir string, names ...string) (map[string]Image, error) {
	if len(names) == 0 {
		entries, err := os.ReadDir(releaseDir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	pinned := map[string]Image{}
	for _, name := range names {
		img, err := ReadImage(filepath.Join(imagesDir, name+".tar"))
		if err != nil {
			return nil, fmt.Errorf("release overlay %s: %w (run make images first)", name, err)
		}
		if path.Base(img.Name) != name {
			return nil, fmt.Errorf("release overlay %s: %s.tar holds the image %s, not a %s image", name, name, img.Name, name)
		}
		if err := pinKustomization(filepath.Join(releaseDir, name, "kustomization.yaml"), DevImageRepo+name, img); err != nil {
			return nil, fmt.Errorf("release overlay %s: %w", name, err)
		}
		pinned[name] = img
	}
	return pinned, nil
}

// pinKustomization sets newName and digest of the images entry named from
// in the kustomization file.
func pinKustomization(file, from string, img Image) error {
	root, err := kyaml.ReadFile(file)
	if err != nil {
		return err
	}
	images, err := root.Pipe(kyaml.Lookup("images"))
	if err != nil || images == nil {
		return fmt.Errorf("%s: no images list", file)
	}
	entry, err := images.Pipe(kyaml.MatchElement("name", from))
	if err != nil || entry == nil {
		return fmt.Errorf("%s: no images entry named %s", file, from)
	}
	for field, value := range map[string]string{"newName": img.Name, "digest": img.Digest} {
		if err := entry.PipeE(kyaml.SetField(field, kyaml.NewStringRNode(value))); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := entry.PipeE(kyaml.Clear("newTag")); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	out, err := kyaml.MarshalWithOptions(root.Document(), &kyaml.EncoderOptions{SeqIndent: kyaml.WideSequenceStyle})
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, info.Mode().Perm())
}
