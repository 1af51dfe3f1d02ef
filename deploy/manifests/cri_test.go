package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestToCRI checks the kubelet-like translation the end-to-end suite runs
// on a real containerd: every overlay's container becomes a CRI
// configuration with its index expanded, the socket directory mounted
// from the host, and the security context kept.
func TestToCRI(t *testing.T) {
	for _, name := range overlays(t) {
		t.Run(name, func(t *testing.T) {
			r := render(t, filepath.Join(kustomizeDir, "overlays", name))
			vols := t.TempDir()
			c, err := r.ToCRI(vols)
			if err != nil {
				t.Fatal(err)
			}
			if c.Image.Image != wantImageRepo+name+":dev" {
				t.Errorf("image = %q", c.Image.Image)
			}
			i := slices.Index(c.Args, "-idx")
			if i < 0 || i+1 >= len(c.Args) || len(c.Args[i+1]) != 2 {
				t.Errorf("args %q: no expanded two-digit -idx", c.Args)
			}
			if !slices.ContainsFunc(c.Mounts, func(m CRIMount) bool {
				return m.ContainerPath == wantSocketDir && m.HostPath == wantSocketDir
			}) {
				t.Errorf("mounts %+v: no %s from the host", c.Mounts, wantSocketDir)
			}
			cfg := slices.IndexFunc(c.Mounts, func(m CRIMount) bool { return m.ContainerPath == filepath.Dir(wantConfigFile) })
			if cfg < 0 {
				t.Errorf("mounts %+v: no configuration at %s", c.Mounts, filepath.Dir(wantConfigFile))
			} else if _, err := os.Stat(filepath.Join(c.Mounts[cfg].HostPath, filepath.Base(wantConfigFile))); err != nil {
				t.Errorf("the configuration file was not written: %v", err)
			}
			sc := c.Linux.SecurityContext
			if sc.RunAsUser == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) || !sc.NoNewPrivs {
				t.Errorf("security context %+v: want a user, all capabilities dropped, no new privileges", sc)
			}
		})
	}
	if _, err := (&Rendered{}).ToCRI(""); err == nil {
		t.Error("ToCRI of nothing succeeded")
	}
}
