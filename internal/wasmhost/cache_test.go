//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/trustedfile"
)

// cacheEntries returns the compilation cache entries under dir: the
// files named by a hex SHA-256, which is how wazero names them.
func cacheEntries(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if b, herr := hex.DecodeString(d.Name()); herr == nil && len(b) == 32 && d.Type().IsRegular() {
			out[path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCacheEntrySwapped checks that a compilation cache entry copied
// over another module's entry is not run: module A answers
// plugin_api_version 1, module B (the same functions) 2; B's entry
// copied over A's, or B's whole directory (with its seal) over A's, must
// not make A's load run B's code (a VersionError for 2): the entry is
// deleted, with a log line, and A compiled again. An untouched entry is
// used as it is.
func TestCacheEntrySwapped(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "cache")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	write := func(name string, m []byte) string {
		path := filepath.Join(work, name)
		if err := os.WriteFile(path, m, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b := write("10-a", fakeModule(APIVersion, false)), write("20-b", fakeModule(2, false))
	logs := &logBuffer{}
	opts := Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), CacheDir: dir}
	loadA := func(what string) {
		t.Helper()
		p, err := Load(ctx, a, opts)
		if err != nil {
			t.Fatalf("loading A %s: %v", what, err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	loadA("first")
	entriesA := cacheEntries(t, dir)
	var ve *VersionError
	if _, err := Load(ctx, b, opts); !errors.As(err, &ve) {
		t.Fatalf("loading B: %v, want a VersionError", err)
	}
	var entryA, entryB string
	for e := range cacheEntries(t, dir) {
		if entriesA[e] {
			entryA = e
		} else {
			entryB = e
		}
	}
	if len(entriesA) != 1 || entryA == "" || entryB == "" {
		t.Fatalf("cache entries: A %v, then A's %q and B's %q; want one each", entriesA, entryA, entryB)
	}
	before, err := os.Stat(entryA)
	if err != nil {
		t.Fatal(err)
	}
	loadA("again")
	if after, err := os.Stat(entryA); err != nil || !os.SameFile(before, after) || logs.contains("deleted") {
		t.Errorf("loading A again replaced its entry (%v) or logged %q", err, logs.String())
	}

	code, err := os.ReadFile(entryB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entryA, code, 0o600); err != nil {
		t.Fatal(err)
	}
	loadA("after B's cache entry replaced A's")
	if !logs.contains("deleted entries not sealed for their module") || !logs.contains("does not match its seal") {
		t.Errorf("no log line about the entry deleted: %s", logs.String())
	}

	// B's directory, seal included, in place of A's.
	dirA, dirB := filepath.Dir(filepath.Dir(entryA)), filepath.Dir(filepath.Dir(entryB))
	if err := os.RemoveAll(dirA); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dirB, dirA); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dirA, filepath.Base(filepath.Dir(entryB)), filepath.Base(entryB)), entryA); err != nil {
		t.Fatal(err)
	}
	loadA("after B's directory replaced A's")
	if !logs.contains("sealed for another module") {
		t.Errorf("no log line about the seal of another module: %s", logs.String())
	}

	// An entry that is a symbolic link (to B's code) is deleted too.
	if err := os.Remove(entryA); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "b-entry"), code, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(work, "b-entry"), entryA); err != nil {
		t.Fatal(err)
	}
	loadA("with a symbolic link as its entry")
	if fi, err := os.Lstat(entryA); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("A's entry after loading it: %v, %v; want a regular file", fi, err)
	}
}

// TestCacheDirRules checks that a compilation cache directory is used
// only if it is trusted: owned by root or the effective user, not
// writable by its group or others, not a symbolic link, and so the
// directories above it. A missing one is made (0700) only where it would
// be trusted. CheckCacheDir says the same without making anything.
func TestCacheDirRules(t *testing.T) {
	work := t.TempDir()
	mkdir := func(name string, mode os.FileMode) string {
		path := filepath.Join(work, name)
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	link := filepath.Join(work, "link")
	if err := os.Symlink(mkdir("target", 0o700), link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir, reason string
	}{
		{"trusted", mkdir("good", 0o700), ""},
		{"missing", filepath.Join(mkdir("parent", 0o755), "a", "b"), ""},
		{"group-writable", mkdir("groupw", 0o770), "writable by its group or others"},
		{"writable by others, sticky", mkdir("sticky", 0o777|os.ModeSticky), "writable by its group or others"},
		{"symbolic link", link, "a symbolic link"},
		{"under a group-writable directory", filepath.Join(mkdir("opengroup", 0o775), "cache"), "writable by its group or others"},
		{"missing under a writable directory", filepath.Join(mkdir("open", 0o777), "x", "cache"), "writable by its group or others"},
	}
	if os.Geteuid() == 0 {
		theirs := mkdir("theirs", 0o700)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ name, dir, reason string }{"another user's", theirs, "owned by uid 65534"},
			struct{ name, dir, reason string }{"in another user's", filepath.Join(theirs, "cache"), "owned by uid 65534"})
	}
	for _, c := range cases {
		checkErr := CheckCacheDir(c.dir)
		_, statErr := os.Lstat(c.dir)
		cache, err := NewCache(c.dir)
		if c.reason == "" {
			if err != nil || checkErr != nil {
				t.Errorf("%s: NewCache: %v; CheckCacheDir: %v", c.name, err, checkErr)
				continue
			}
			if fi, err := os.Stat(c.dir); statErr != nil && (err != nil || fi.Mode().Perm() != 0o700) {
				t.Errorf("%s: made %v, %v; want mode 0700", c.name, fi, err)
			}
			if cache.Dir() != c.dir {
				t.Errorf("%s: Dir() = %q, want %q", c.name, cache.Dir(), c.dir)
			}
			_ = cache.Close(context.Background())
			continue
		}
		for what, err := range map[string]error{"NewCache": err, "CheckCacheDir": checkErr} {
			if !trustedfile.IsUntrusted(err) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s: %s: %v, want a refusal because %q", c.name, what, err, c.reason)
			}
		}
		if _, err := os.Lstat(c.dir); errors.Is(statErr, fs.ErrNotExist) && err == nil {
			t.Errorf("%s: the refused directory was made", c.name)
		}
	}
	// Load with a refused CacheDir fails.
	path := filepath.Join(work, "10-a")
	if err := os.WriteFile(path, fakeModule(APIVersion, false), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), path, Options{Logger: slog.New(slog.DiscardHandler), CacheDir: filepath.Join(work, "groupw")})
	if !trustedfile.IsUntrusted(err) || !strings.Contains(err.Error(), "compilation cache directory") {
		t.Errorf("Load with a group-writable cache directory: %v", err)
	}
}
