//go:build !nri_no_wasm

package wasmhost

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nrikit/nrikit/internal/trustedfile"
)

// The on-disk compilation cache keeps each module's entries in a
// directory of its own, named by the SHA-256 of the module's bytes, into
// which wazero writes (wazero-VERSION-ARCH-OS/KEY, one entry per CPU
// feature set). wazero checks an entry by a CRC of its machine code
// only, so an entry copied over another (from another module's
// directory, another host, a backup) would run that other module's
// code. nrikit seals the directory: the file "seal" names the module and
// the SHA-256 and size of every entry wazero wrote for it. Before a
// process first uses the directory, every entry is checked against the
// seal and those that do not match (or are not sealed, or are not
// regular files) are deleted, so wazero compiles the module again. The
// seal does not stop a user who can write the directory (they can write
// a seal as well): the directory's checks (CheckCacheDir) do.

// sealName is the seal's file name in a module's cache directory.
const sealName = "seal"

// sealHeader starts a seal file.
const sealHeader = "nrikit WASM compilation cache seal 1"

// maxSealSize caps a seal file (a line per entry).
const maxSealSize = 1 << 20

// seal is a module's cache directory and its sealed entries.
type seal struct {
	dir     string
	module  [sha256.Size]byte
	entries map[string]sealedEntry // by path relative to dir
}

// sealedEntry is a sealed entry and what it looked like when checked.
type sealedEntry struct {
	size  int64
	sum   [sha256.Size]byte
	mtime time.Time // when last checked, to see a change
}

// openSeal reads the seal of dir, the cache directory of module, and
// deletes the entries that do not match it, logging why.
func openSeal(log *slog.Logger, dir string, module [sha256.Size]byte) *seal {
	s := &seal{dir: dir, module: module, entries: map[string]sealedEntry{}}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s
	case err != nil:
		log.Warn("WASM compilation cache: cannot read a module's directory", "dir", dir, "error", err)
		return s
	case !fi.IsDir():
		log.Warn("WASM compilation cache: removing a module's directory that is a "+kindOf(fi), "dir", dir)
		_ = os.Remove(dir)
		return s
	}
	recorded, reason := readSeal(filepath.Join(dir, sealName), module)
	var discarded []string
	for _, e := range listEntries(dir) {
		why := ""
		switch rec, ok := recorded[e.rel]; {
		case !e.info.Mode().IsRegular():
			why = "a " + kindOf(e.info)
		case !ok && reason != "":
			why = reason
		case !ok:
			why = "not in the seal"
		default:
			sum, err := hashEntry(filepath.Join(dir, e.rel), e.info)
			switch {
			case err != nil:
				why = err.Error()
			case sum != rec.sum || e.info.Size() != rec.size:
				why = "does not match its seal"
			default:
				s.entries[e.rel] = sealedEntry{size: rec.size, sum: sum, mtime: e.info.ModTime()}
				continue
			}
		}
		discarded = append(discarded, e.rel+" ("+why+")")
		_ = os.Remove(filepath.Join(dir, e.rel))
	}
	if len(discarded) > 0 {
		log.Warn("WASM compilation cache: deleted entries not sealed for their module, it is compiled again",
			"dir", dir, "entries", strings.Join(discarded, ", "))
	}
	return s
}

// readSeal returns the entries the seal file at path records for
// module, or why there are none.
func readSeal(path string, module [sha256.Size]byte) (map[string]sealedEntry, string) {
	f, _, err := trustedfile.OpenRegular(path, maxSealSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "no seal"
	}
	if err != nil {
		return nil, "seal unreadable: " + err.Error()
	}
	defer f.Close()
	b, err := trustedfile.ReadAll(f, maxSealSize)
	if err != nil {
		return nil, "seal unreadable: " + err.Error()
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != sealHeader {
		return nil, "seal of an unknown format"
	}
	if !sc.Scan() || sc.Text() != "module "+hex.EncodeToString(module[:]) {
		return nil, "sealed for another module"
	}
	out := map[string]sealedEntry{}
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) != 4 || f[0] != "entry" {
			return nil, "seal of an unknown format"
		}
		var e sealedEntry
		sum, err := hex.DecodeString(f[1])
		if err != nil || len(sum) != len(e.sum) {
			return nil, "seal of an unknown format"
		}
		copy(e.sum[:], sum)
		if e.size, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return nil, "seal of an unknown format"
		}
		out[f[3]] = e
	}
	return out, ""
}

// update seals the entries wazero added or changed since the seal was
// read or last updated. A seal that cannot be written is logged: the
// entries are then deleted, and the module compiled, by the next
// process.
func (s *seal) update(log *slog.Logger) {
	changed := false
	seen := map[string]bool{}
	for _, e := range listEntries(s.dir) {
		if !e.info.Mode().IsRegular() {
			continue
		}
		seen[e.rel] = true
		if old, ok := s.entries[e.rel]; ok && old.size == e.info.Size() && old.mtime.Equal(e.info.ModTime()) {
			continue
		}
		sum, err := hashEntry(filepath.Join(s.dir, e.rel), e.info)
		if err != nil {
			log.Warn("WASM compilation cache: cannot seal an entry", "entry", filepath.Join(s.dir, e.rel), "error", err)
			continue
		}
		s.entries[e.rel] = sealedEntry{size: e.info.Size(), sum: sum, mtime: e.info.ModTime()}
		changed = true
	}
	for rel := range s.entries {
		if !seen[rel] {
			delete(s.entries, rel)
			changed = true
		}
	}
	if !changed {
		return
	}
	if err := s.write(); err != nil {
		log.Warn("WASM compilation cache: cannot write the seal; the next process compiles the module again", "dir", s.dir, "error", err)
	}
}

// write replaces the seal file.
func (s *seal) write() error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nmodule %s\n", sealHeader, hex.EncodeToString(s.module[:]))
	for rel, e := range s.entries {
		fmt.Fprintf(&b, "entry %s %d %s\n", hex.EncodeToString(e.sum[:]), e.size, rel)
	}
	f, err := os.CreateTemp(s.dir, sealName+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(s.dir, sealName))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// cacheEntry is a file of a module's cache directory that wazero would
// load: DIR/SUBDIR/KEY, KEY a hex SHA-256.
type cacheEntry struct {
	rel  string
	info fs.FileInfo // from Lstat
}

// listEntries lists the entries under dir. A symbolic link where wazero
// looks for its version's directory is removed (wazero would follow it).
func listEntries(dir string) []cacheEntry {
	subs, _ := os.ReadDir(dir)
	var out []cacheEntry
	for _, sub := range subs {
		if sub.Type()&fs.ModeSymlink != 0 {
			_ = os.Remove(filepath.Join(dir, sub.Name()))
			continue
		}
		if !sub.IsDir() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, sub.Name()))
		for _, f := range files {
			if k, err := hex.DecodeString(f.Name()); err != nil || len(k) != sha256.Size {
				continue // wazero's temporary files, for one
			}
			rel := filepath.Join(sub.Name(), f.Name())
			if info, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
				out = append(out, cacheEntry{rel: rel, info: info})
			}
		}
	}
	return out
}

// hashEntry returns the SHA-256 of the entry at path, which must still
// be the file info describes.
func hashEntry(path string, info fs.FileInfo) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, info) {
		return sum, errors.New("replaced while read")
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// kindOf names the type of a file.
func kindOf(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}
