package harness

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Image annotations of an OCI image layout's index.
const (
	annotationRefName   = "org.opencontainers.image.ref.name"
	annotationImageName = "io.containerd.image.name"
)

// containersCache is where containers/image keeps its blob-info cache for
// root, whatever copyimg is told: LoadImages removes what it creates there.
var containersCache = []string{"/var/lib/containers", "/var/lib/containers/cache", "/var/lib/containers/cache/blob-info-cache-v1.sqlite"}

// LoadImages loads every image of the OCI layout tarballs tars into the
// storage of the CRI-O whose directory is dir, with CRI-O's own
// test/copyimg (CRI-O has no import command; copyimg writes the same
// containers/storage). Each image is named after its
// io.containerd.image.name annotation (or its ref.name), as `ctr images
// import` names it. It must run while that CRI-O is stopped.
func LoadImages(ctx context.Context, copyimg, dir string, tars ...string) (err error) {
	created := ""
	for _, p := range containersCache {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			created = p
			break
		}
	}
	defer func() {
		if created != "" {
			if rerr := os.RemoveAll(created); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	for _, path := range tars {
		refs, err := archiveRefs(path)
		if err != nil {
			return err
		}
		for _, r := range refs {
			src := "oci-archive:" + path
			if r.refName != "" {
				src += ":" + r.refName
			}
			cmd := exec.CommandContext(ctx, copyimg, "--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "runroot"),
				"--storage-driver", "overlay", "--signature-policy", filepath.Join(dir, "policy.json"),
				"--import-from", src, "--image-name", r.name)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("copyimg %s as %s: %w\n%s", src, r.name, err, out)
			}
		}
	}
	return nil
}

// archiveRef is one image of an OCI layout tarball.
type archiveRef struct{ refName, name string }

// archiveRefs lists the images of the OCI layout tarball at path from its
// index.json. Two images with the same ref.name cannot be told apart by
// copyimg: that is an error, as is an image without a name.
func archiveRefs(path string) ([]archiveRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no index.json: not an OCI image layout", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if filepath.Clean(hdr.Name) != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&index); err != nil {
			return nil, fmt.Errorf("%s: index.json: %w", path, err)
		}
		var refs []archiveRef
		seen := map[string]bool{}
		for _, m := range index.Manifests {
			r := archiveRef{refName: m.Annotations[annotationRefName], name: m.Annotations[annotationImageName]}
			if r.name == "" {
				r.name = r.refName
			}
			if r.name == "" || seen[r.refName] || (r.refName == "" && len(index.Manifests) > 1) {
				return nil, fmt.Errorf("%s: cannot name or select image %d of %d (ref.name %q)", path, len(refs)+1, len(index.Manifests), r.refName)
			}
			seen[r.refName] = true
			refs = append(refs, r)
		}
		return refs, nil
	}
}
