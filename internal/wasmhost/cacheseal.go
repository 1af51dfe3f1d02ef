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
//
// Hashing a Go guest's entry (29 MB) costs 20 ms of every start, so an
// entry's seal also records its stamp (fileStamp): an entry whose stamp
// is the sealed one has not been written to or replaced since it was
// hashed, and is not read again. The nrikit subdirectory (ownSubdir)
// keeps what nrikit derives from the module, sealed the same way: the
// module instrumented by internal/wasmfuel (see Cache.build). Such a file
// is read whole when it is used, so one whose stamp is not the sealed one
// is hashed then, as it is read (readOwn), not also when the seal is
// opened.

// sealName is the seal's file name in a module's cache directory.
const sealName = "seal"

// sealHeader starts a seal file; sealHeaderV1's (read, not written)
// have no stamps.
const (
	sealHeader   = "nrikit WASM compilation cache seal 2"
	sealHeaderV1 = "nrikit WASM compilation cache seal 1"
)

// ownSubdir is the subdirectory of a module's cache directory for what
// nrikit keeps there: files named *.wasm (see Cache.build).
const ownSubdir = "nrikit"

// stampSettle is how long before it is hashed an entry must have last
// changed for its stamp to be sealed: a write in the same tick of the
// file system's clock as the content hashed would leave the change time
// as it was. A fresh entry is hashed by the next process again, which
// seals its stamp.
const stampSettle = 2 * time.Second

// maxSealSize caps a seal file (a line per entry).
const maxSealSize = 1 << 20

// seal is a module's cache directory and its sealed entries.
type seal struct {
	dir     string
	settle  time.Duration // see stampSettle
	module  [sha256.Size]byte
	entries map[string]sealedEntry // by path relative to dir

	// restamped tells that readOwn learned a stamp the seal file does
	// not have yet (update writes it).
	restamped bool
}

// sealedEntry is a sealed entry and what it looked like when checked.
type sealedEntry struct {
	size  int64
	sum   [sha256.Size]byte
	mtime time.Time // when last checked, to see a change

	// stamp, if stamped, is the entry's when it was hashed, settled
	// (stampSettle).
	stamp   fileStamp
	stamped bool

	// unchecked marks a file of nrikit's own (ownSubdir) that is sealed
	// but was not hashed when the seal was opened: readOwn hashes the
	// bytes it reads instead, so that the file is read and hashed once.
	unchecked bool
}

// fileStamp is what a write to a file, or its replacement, changes: its
// change time (which no user can set, and which a copy, a restore or a
// rename gives the file anew), with its device, inode, size and
// modification time.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// String returns the stamp as the seal writes it.
func (st fileStamp) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.dev, st.ino, st.size, st.mtime, st.ctime)
}

// parseStamp parses what String returns.
func parseStamp(s string) (fileStamp, bool) {
	var st fileStamp
	f := strings.Split(s, ":")
	if len(f) != 5 {
		return st, false
	}
	var err [5]error
	st.dev, err[0] = strconv.ParseUint(f[0], 10, 64)
	st.ino, err[1] = strconv.ParseUint(f[1], 10, 64)
	st.size, err[2] = strconv.ParseInt(f[2], 10, 64)
	st.mtime, err[3] = strconv.ParseInt(f[3], 10, 64)
	st.ctime, err[4] = strconv.ParseInt(f[4], 10, 64)
	return st, errors.Join(err[:]...) == nil
}

// openSeal reads the seal of dir, the cache directory of module, and
// deletes the entries that do not match it, logging why.
func openSeal(log *slog.Logger, dir string, module [sha256.Size]byte, settle time.Duration) *seal {
	s := &seal{dir: dir, module: module, entries: map[string]sealedEntry{}, settle: settle}
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
	stamped := false // an entry's stamp was learned: write the seal
	for _, e := range listEntries(dir) {
		why := ""
		switch rec, ok := recorded[e.rel]; {
		case !e.info.Mode().IsRegular():
			why = "a " + kindOf(e.info)
		case !ok && reason != "":
			why = reason
		case !ok:
			why = "not in the seal"
		case rec.stamped && rec.stamp == stampOrZero(e.info):
			rec.mtime = e.info.ModTime()
			s.entries[e.rel] = rec
			continue
		case isOwn(e.rel):
			rec.unchecked = true
			s.entries[e.rel] = rec
			continue
		default:
			got, err := hashEntry(filepath.Join(dir, e.rel), e.info, settle)
			switch {
			case err != nil:
				why = err.Error()
			case got.sum != rec.sum || got.size != rec.size:
				why = "does not match its seal"
			default:
				s.entries[e.rel] = got
				stamped = stamped || got.stamped
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
	if stamped && len(discarded) == 0 {
		if err := s.write(); err != nil {
			log.Debug("WASM compilation cache: cannot record the entries' stamps; the next process hashes them again", "dir", dir, "error", err)
		}
	}
	return s
}

// isOwn reports whether rel, relative to a module's cache directory, is
// one of nrikit's own files (ownSubdir).
func isOwn(rel string) bool {
	return strings.HasPrefix(rel, ownSubdir+string(filepath.Separator))
}

// stampOrZero returns fi's stamp, or the zero stamp (which no sealed
// entry has) if the system gives none.
func stampOrZero(fi fs.FileInfo) fileStamp {
	st, _ := stampOf(fi)
	return st
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
	fields := 5 // entry SUM SIZE STAMP PATH
	switch {
	case !sc.Scan():
		return nil, "seal of an unknown format"
	case sc.Text() == sealHeaderV1:
		fields = 4 // entry SUM SIZE PATH
	case sc.Text() != sealHeader:
		return nil, "seal of an unknown format"
	}
	if !sc.Scan() || sc.Text() != "module "+hex.EncodeToString(module[:]) {
		return nil, "sealed for another module"
	}
	out := map[string]sealedEntry{}
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", fields)
		if len(f) != fields || f[0] != "entry" {
			return nil, "seal of an unknown format"
		}
		var e sealedEntry
		if fields == 5 {
			if f[3] != "-" {
				if e.stamp, e.stamped = parseStamp(f[3]); !e.stamped {
					return nil, "seal of an unknown format"
				}
			}
			f = []string{f[0], f[1], f[2], f[4]}
		}
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
// read or last updated, and reports whether there were any (the module
// was compiled). A seal that cannot be written is logged: the entries
// are then deleted, and the module compiled, by the next process.
func (s *seal) update(log *slog.Logger) (written bool) {
	changed := false
	seen := map[string]bool{}
	for _, e := range listEntries(s.dir) {
		if !e.info.Mode().IsRegular() {
			continue
		}
		seen[e.rel] = true
		if old, ok := s.entries[e.rel]; ok && (old.unchecked || old.size == e.info.Size() && old.mtime.Equal(e.info.ModTime())) {
			// An unchecked file keeps its seal until it is read: sealing
			// it here would vouch for bytes nobody checked.
			continue
		}
		written = written || !isOwn(e.rel)
		got, err := hashEntry(filepath.Join(s.dir, e.rel), e.info, s.settle)
		if err != nil {
			log.Warn("WASM compilation cache: cannot seal an entry", "entry", filepath.Join(s.dir, e.rel), "error", err)
			continue
		}
		s.entries[e.rel] = got
		changed = true
	}
	for rel := range s.entries {
		if !seen[rel] {
			delete(s.entries, rel)
			changed = true
		}
	}
	changed = changed || s.restamped
	s.restamped = false
	if !changed {
		return written
	}
	if err := s.write(); err != nil {
		log.Warn("WASM compilation cache: cannot write the seal; the next process compiles the module again", "dir", s.dir, "error", err)
	}
	return written
}

// write replaces the seal file.
func (s *seal) write() error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nmodule %s\n", sealHeader, hex.EncodeToString(s.module[:]))
	for rel, e := range s.entries {
		stamp := "-"
		if e.stamped {
			stamp = e.stamp.String()
		}
		fmt.Fprintf(&b, "entry %s %d %s %s\n", hex.EncodeToString(e.sum[:]), e.size, stamp, rel)
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
// load, DIR/SUBDIR/KEY with KEY a hex SHA-256, or that nrikit keeps
// there, DIR/nrikit/NAME.wasm (ownSubdir).
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
			if sub.Name() == ownSubdir {
				if !strings.HasSuffix(f.Name(), ".wasm") {
					continue // temporary files
				}
			} else if k, err := hex.DecodeString(f.Name()); err != nil || len(k) != sha256.Size {
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

// hashEntry hashes the entry at path, which must still be the file info
// describes, and returns it as sealed: with its stamp if it had not
// changed for settle before it was read and did not change while read.
func hashEntry(path string, info fs.FileInfo, settle time.Duration) (sealedEntry, error) {
	var e sealedEntry
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return e, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, info) {
		return e, errors.New("replaced while read")
	}
	h := sha256.New()
	if e.size, err = io.Copy(h, f); err != nil {
		return e, err
	}
	h.Sum(e.sum[:0])
	e.mtime = fi.ModTime()
	e.stamp, e.stamped = settledStamp(f, fi, e.size, start, settle)
	return e, nil
}

// settledStamp returns the stamp of f, which fi describes, if it may be
// sealed: f's size is size, the size read, it did not change while it was
// read (it still has fi's stamp), and it had not changed for settle when
// the read began at start.
func settledStamp(f *os.File, fi fs.FileInfo, size int64, start time.Time, settle time.Duration) (fileStamp, bool) {
	before, ok := stampOf(fi)
	after, err := f.Stat()
	if !ok || err != nil || stampOrZero(after) != before || before.size != size ||
		!time.Unix(0, before.ctime).Before(start.Add(-settle)) {
		return fileStamp{}, false
	}
	return before, true
}

// readOwn returns the file rel (under ownSubdir) if it is sealed and
// still what was sealed: its stamp the sealed one, or its bytes of the
// sealed SHA-256 (their stamp is then sealed if it has settled). A file
// that is not is logged; the caller derives it again and keeps it
// (keepOwn), replacing it.
func (s *seal) readOwn(log *slog.Logger, rel string) ([]byte, bool) {
	rec, ok := s.entries[rel]
	if !ok {
		return nil, false
	}
	start := time.Now()
	path := filepath.Join(s.dir, rel)
	// Opened without a size limit, so that a file of another size is
	// told apart from one that cannot be read; ReadAll bounds the read.
	f, fi, err := trustedfile.OpenRegular(path, -1)
	if err != nil {
		s.dropOwn(log, rel, "cannot be read: "+err.Error())
		return nil, false
	}
	defer f.Close()
	if fi.Size() != rec.size {
		s.dropOwn(log, rel, "does not match its seal")
		return nil, false
	}
	b, err := trustedfile.ReadAll(f, rec.size)
	if err != nil {
		s.dropOwn(log, rel, "cannot be read: "+err.Error())
		return nil, false
	}
	if rec.stamped && stampOrZero(fi) == rec.stamp {
		return b, true
	}
	if int64(len(b)) != rec.size || sha256.Sum256(b) != rec.sum {
		s.dropOwn(log, rel, "does not match its seal")
		return nil, false
	}
	checked := sealedEntry{size: rec.size, sum: rec.sum, mtime: fi.ModTime()}
	if checked.stamp, checked.stamped = settledStamp(f, fi, rec.size, start, s.settle); checked.stamped {
		s.restamped = true
	}
	s.entries[rel] = checked
	return b, true
}

// dropOwn deletes the file rel (under ownSubdir), which is not what was
// sealed, and unseals it, logging why: whatever is found there later is
// not sealed before it was written by keepOwn.
func (s *seal) dropOwn(log *slog.Logger, rel, why string) {
	delete(s.entries, rel)
	_ = os.Remove(filepath.Join(s.dir, rel))
	log.Warn("WASM compilation cache: deleted a kept file, it is derived again", "file", filepath.Join(s.dir, rel), "reason", why)
}

// keepOwn writes b to the file rel (under ownSubdir), replacing it; the
// next update seals it. A file that cannot be written is logged: the
// next process derives it again.
func (s *seal) keepOwn(log *slog.Logger, rel string, b []byte) {
	path := filepath.Join(s.dir, rel)
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	var f *os.File
	if err == nil {
		f, err = os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	}
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}
	if err != nil {
		log.Warn("WASM compilation cache: cannot keep a file; the next process derives it again", "file", path, "error", err)
	}
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
