//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/wasmfuel"
)

// cacheFixture is a work directory with module files and a compilation
// cache directory, loaded through a new Cache each time (as a new
// process would).
type cacheFixture struct {
	t    *testing.T
	work string
	dir  string
	logs *logBuffer
	// compiles counts the loads that compiled their module (the
	// Cache's compiled hook).
	compiles int
}

func newCacheFixture(t *testing.T) *cacheFixture {
	work := t.TempDir()
	return &cacheFixture{t: t, work: work, dir: filepath.Join(work, "cache"), logs: &logBuffer{}}
}

// module writes m as the module file name and returns its path.
func (f *cacheFixture) module(name string, m []byte) string {
	path := filepath.Join(f.work, name)
	if err := os.WriteFile(path, m, 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// load loads the module at path through a new Cache whose stamps settle
// after settle, and closes it; it returns Load's error.
func (f *cacheFixture) load(path string, fuel bool, settle time.Duration) error {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := NewCache(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close(ctx)
	c.settle = settle
	c.compiled = func() { f.compiles++ }
	p, err := Load(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Cache: c, FuelChecks: fuel})
	if err != nil {
		return err
	}
	if err := p.Close(ctx); err != nil {
		f.t.Fatal(err)
	}
	return nil
}

// moduleDir returns the cache directory of module m.
func (f *cacheFixture) moduleDir(m []byte) string {
	sum := sha256.Sum256(m)
	return filepath.Join(f.dir, hex.EncodeToString(sum[:]))
}

// sealLines returns the entry lines of module m's seal.
func (f *cacheFixture) sealLines(m []byte) []string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.moduleDir(m), sealName))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "entry ") {
			out = append(out, l)
		}
	}
	return out
}

// TestCacheKeepsInstrumented checks that a module loaded with
// FuelChecks is instrumented once: the instrumented module is kept,
// sealed, in the module's cache directory and read back by the next
// process (the same file, not written again); one that no longer
// matches its seal (here: another module's, instrumented) is deleted
// and the module instrumented again, so the other module's code does
// not run.
func TestCacheKeepsInstrumented(t *testing.T) {
	f := newCacheFixture(t)
	a, b := fakeModule(APIVersion, false), fakeModule(2, false)
	pathA := f.module("10-a", a)
	if err := f.load(pathA, true, stampSettle); err != nil {
		t.Fatalf("first load: %v", err)
	}
	kept := filepath.Join(f.moduleDir(a), instrumentedFile())
	want, err := wasmfuel.Instrument(a, fuelBudget)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(kept)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("kept instrumented module: %d bytes, %v; want the %d bytes wasmfuel.Instrument writes", len(got), err, len(want))
	}
	sealed := false
	for _, l := range f.sealLines(a) {
		sealed = sealed || strings.HasSuffix(l, " "+instrumentedFile())
	}
	if !sealed {
		t.Fatalf("the instrumented module is not in the seal: %q", f.sealLines(a))
	}
	before, _ := os.Stat(kept)
	if err := f.load(pathA, true, stampSettle); err != nil {
		t.Fatalf("second load: %v", err)
	}
	if after, err := os.Stat(kept); err != nil || !os.SameFile(before, after) || f.logs.contains("deleted") {
		t.Fatalf("the second load wrote the instrumented module again (%v) or logged %q", err, f.logs.String())
	}

	other, err := wasmfuel.Instrument(b, fuelBudget)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, other, 0o600); err != nil {
		t.Fatal(err)
	}
	var ve *VersionError
	if err := f.load(pathA, true, stampSettle); errors.As(err, &ve) || err != nil {
		t.Fatalf("loading A with B's instrumented module in its cache: %v (a VersionError ran B's code)", err)
	}
	if !f.logs.contains("does not match its seal") || !f.logs.contains(instrumentedFile()) {
		t.Errorf("no log line about the instrumented module deleted: %s", f.logs.String())
	}
	if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, want) {
		t.Errorf("kept instrumented module after the mismatch: %d bytes, %v; want A's again", len(got), err)
	}
}

// TestSealStamps checks that an entry whose stamp is the sealed one is
// not hashed (a seal whose sum no longer matches is believed while the
// stamp does) and that a write to the entry, even of the same bytes,
// makes the next process hash it (and here delete it). Stamps are
// sealed only for entries that have settled: not for a fresh one.
func TestSealStamps(t *testing.T) {
	if _, ok := stampOf(mustStat(t, t.TempDir())); !ok {
		t.Skip("no file stamps on this system: every entry is hashed")
	}
	fresh := newCacheFixture(t)
	a := fakeModule(APIVersion, false)
	if err := fresh.load(fresh.module("10-a", a), false, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, l := range fresh.sealLines(a) {
		if strings.Fields(l)[3] != "-" {
			t.Errorf("an entry written a moment ago was sealed with its stamp: %q", l)
		}
	}

	f := newCacheFixture(t)
	pathA := f.module("10-a", a)
	if err := f.load(pathA, false, 0); err != nil {
		t.Fatal(err)
	}
	lines := f.sealLines(a)
	if len(lines) != 1 || strings.Fields(lines[0])[3] == "-" {
		t.Fatalf("seal %q: want one entry, with its stamp", lines)
	}
	entry := filepath.Join(f.moduleDir(a), strings.Fields(lines[0])[4])
	sealPath := filepath.Join(f.moduleDir(a), sealName)
	sb, err := os.ReadFile(sealPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := strings.Fields(lines[0])[1]
	if err := os.WriteFile(sealPath, bytes.Replace(sb, []byte(sum), bytes.Repeat([]byte("0"), len(sum)), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	before := mustStat(t, entry)
	if err := f.load(pathA, false, 0); err != nil {
		t.Fatal(err)
	}
	if after := mustStat(t, entry); !os.SameFile(before, after) || f.logs.contains("deleted") {
		t.Fatalf("an entry with its sealed stamp was hashed (deleted for the sum in its seal): %s", f.logs.String())
	}

	code, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entry, code, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.load(pathA, false, 0); err != nil {
		t.Fatal(err)
	}
	if !f.logs.contains("does not match its seal") {
		t.Errorf("an entry written to after it was sealed was not hashed again: %s", f.logs.String())
	}
}

// TestSealReadsVersion1 checks that a seal of the first format (no
// stamps) still vouches for its entries: they are hashed, not deleted.
func TestSealReadsVersion1(t *testing.T) {
	f := newCacheFixture(t)
	a := fakeModule(APIVersion, false)
	pathA := f.module("10-a", a)
	if err := f.load(pathA, false, time.Hour); err != nil {
		t.Fatal(err)
	}
	lines := f.sealLines(a)
	if len(lines) != 1 {
		t.Fatalf("seal %q: want one entry", lines)
	}
	fl := strings.Fields(lines[0])
	sum := sha256.Sum256(a)
	v1 := sealHeaderV1 + "\nmodule " + hex.EncodeToString(sum[:]) + "\nentry " + fl[1] + " " + fl[2] + " " + fl[4] + "\n"
	if err := os.WriteFile(filepath.Join(f.moduleDir(a), sealName), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(f.moduleDir(a), fl[4])
	before := mustStat(t, entry)
	if err := f.load(pathA, false, time.Hour); err != nil {
		t.Fatal(err)
	}
	if after := mustStat(t, entry); !os.SameFile(before, after) || f.logs.contains("deleted") {
		t.Errorf("an entry sealed by a version-1 seal was not used: %s", f.logs.String())
	}
}

// mustStat returns path's information.
func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestKeptFileCheckedOnRead checks that the instrumented module kept in
// a module's cache directory is hashed where it is read, once, not also
// when the seal is opened: a load without the fuel checks (which does not
// read it) leaves a kept file changed in place alone and sealed as it
// was, not sealed anew, and the next load that reads it finds the change,
// deletes the file and instruments the module again. A kept file that
// matches its seal gets its stamp sealed once it has settled.
func TestKeptFileCheckedOnRead(t *testing.T) {
	f := newCacheFixture(t)
	a := fakeModule(APIVersion, false)
	pathA := f.module("10-a", a)
	if err := f.load(pathA, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(f.moduleDir(a), instrumentedFile())
	want, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	keptLine := func() string {
		for _, l := range f.sealLines(a) {
			if strings.HasSuffix(l, " "+instrumentedFile()) {
				return l
			}
		}
		t.Fatalf("the kept file is not in the seal: %q", f.sealLines(a))
		return ""
	}
	sealed := keptLine()

	w, err := os.OpenFile(kept, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.WriteAt([]byte{want[len(want)-1] ^ 0xff}, int64(len(want)-1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.load(pathA, false, time.Hour); err != nil {
		t.Fatal(err)
	}
	if f.logs.contains(instrumentedFile()) {
		t.Errorf("a load that does not read the kept file hashed it: %s", f.logs.String())
	}
	if got := keptLine(); got != sealed {
		t.Fatalf("a load that did not check the kept file sealed it anew: %q, was %q", got, sealed)
	}

	if err := f.load(pathA, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	if !f.logs.contains("does not match its seal") || !f.logs.contains(instrumentedFile()) {
		t.Errorf("no log line about the changed kept file: %s", f.logs.String())
	}
	if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("kept file after the change was found: %d bytes, %v; want the instrumented module again", len(got), err)
	}
	if stamp := strings.Fields(keptLine())[3]; stamp != "-" {
		t.Fatalf("the kept file was sealed with its stamp a moment after it was written: %q", stamp)
	}

	if _, ok := stampOf(mustStat(t, kept)); !ok {
		return // no stamps on this system
	}
	if err := f.load(pathA, true, 0); err != nil {
		t.Fatal(err)
	}
	if stamp := strings.Fields(keptLine())[3]; stamp == "-" {
		t.Errorf("a kept file checked on read, settled, was not sealed with its stamp: %q", keptLine())
	}
}

// TestCompileMemoryReleased checks when a Cache returns the memory a
// compilation left free: after a module was compiled, with or without a
// directory, and not when it was taken from the directory.
func TestCompileMemoryReleased(t *testing.T) {
	a := fakeModule(APIVersion, false)
	for _, fuel := range []bool{false, true} {
		f := newCacheFixture(t)
		pathA := f.module("10-a", a)
		for i, want := range []int{1, 1, 2} {
			if i == 2 {
				if err := os.RemoveAll(f.dir); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.load(pathA, fuel, time.Hour); err != nil {
				t.Fatal(err)
			}
			if f.compiles != want {
				t.Errorf("fuel %v, load %d: %d loads released the compilation's memory, want %d (the first compiles, the second finds the entries, the third has an empty directory)",
					fuel, i+1, f.compiles, want)
			}
		}
	}

	released := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := NewCache("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	c.compiled = func() { released++ }
	p, err := Load(ctx, newCacheFixture(t).module("10-a", a), Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if released != 1 {
		t.Errorf("a load without a directory released the compilation's memory %d times, want 1", released)
	}
}
