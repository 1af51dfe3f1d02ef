package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoutePolicyDirectory: the policy file's directories are trusted as
// the plugin directory's are: a file in a directory others may write is
// refused, by Load and by CheckTrusted (route "policy directory").
func TestRoutePolicyDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nri")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("a policy in a trusted directory: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), dir+": writable by its group or others") {
		t.Errorf("Load of a policy in a directory others may write: %v", err)
	}
	if err := CheckTrusted(path); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("CheckTrusted of a policy in a directory others may write: %v", err)
	}
	// Through a symbolic link from a trusted directory, the directory of
	// the file it leads to is checked too.
	trusted := t.TempDir()
	link := filepath.Join(trusted, "policy.yaml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("Load through a link to a policy in a directory others may write: %v", err)
	}
	// A directory others may write, without the file: CheckDirectory says
	// so (the runtime fails closed rather than run with no policy).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := CheckDirectory(path); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("CheckDirectory of a missing policy in a directory others may write: %v", err)
	}
	if err := CheckDirectory(filepath.Join(trusted, "absent.yaml")); err != nil {
		t.Errorf("CheckDirectory of a missing policy in a trusted directory: %v", err)
	}
}
