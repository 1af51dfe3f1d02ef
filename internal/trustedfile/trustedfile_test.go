//go:build unix

package trustedfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody owns the files that must not be trusted.
const nobody = 65534

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// file writes content to dir/name with mode (whatever the umask).
func file(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	must(t, os.WriteFile(path, []byte(content), 0o600))
	must(t, os.Chmod(path, mode))
	return path
}

// refused checks that err is an *Error for a path ending in pathSuffix
// whose reason contains reason.
func refused(t *testing.T, what string, err error, pathSuffix, reason string) {
	t.Helper()
	var e *Error
	switch {
	case !errors.As(err, &e):
		t.Errorf("%s: %v, want a refusal (%s)", what, err, reason)
	case !strings.HasSuffix(e.Path, pathSuffix) || !strings.Contains(e.Reason, reason):
		t.Errorf("%s: refused %q because %q, want ...%s because ...%s...", what, e.Path, e.Reason, pathSuffix, reason)
	case !IsUntrusted(err) || e.Error() != e.Path+": "+e.Reason:
		t.Errorf("%s: IsUntrusted or the message of %q", what, e.Error())
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := file(t, dir, "good", "content", 0o644)
	if b, err := ReadFile(good, 7); err != nil || string(b) != "content" {
		t.Errorf("ReadFile of a trusted file of exactly the limit: %q, %v", b, err)
	}
	if b, err := ReadFile(good, -1); err != nil || string(b) != "content" {
		t.Errorf("ReadFile without a limit: %q, %v", b, err)
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(good, link))
	if b, err := ReadFile(link, 100); err != nil || string(b) != "content" {
		t.Errorf("ReadFile through a symbolic link: %q, %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want ErrNotExist", err)
	}

	_, err := ReadFile(good, 6)
	refused(t, "one byte over the limit", err, "/good", "7 bytes, over the limit of 6")

	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	start := time.Now()
	_, err = ReadFile(fifo, 100)
	refused(t, "FIFO", err, "/fifo", "a named pipe, not a regular file")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing a FIFO took %v", d)
	}
	zero := filepath.Join(dir, "zero")
	must(t, os.Symlink("/dev/zero", zero))
	_, err = ReadFile(zero, -1)
	refused(t, "symbolic link to /dev/zero", err, "/zero", "a character device, not a regular file")
	_, err = ReadFile(dir, -1)
	refused(t, "directory", err, filepath.Base(dir), "a directory, not a regular file")

	_, err = ReadFile(file(t, dir, "groupw", "x", 0o664), -1)
	refused(t, "group-writable", err, "/groupw", "writable by its group or others (mode -rw-rw-r--)")
	_, err = ReadFile(file(t, dir, "otherw", "x", 0o646), -1)
	refused(t, "writable by others", err, "/otherw", "writable by its group or others")

	// OpenRegular keeps the type and size rules only.
	f, _, err := OpenRegular(filepath.Join(dir, "groupw"), 1)
	if err != nil {
		t.Errorf("OpenRegular of a group-writable file: %v", err)
	} else {
		f.Close()
	}
	_, _, err = OpenRegular(fifo, -1)
	refused(t, "OpenRegular of a FIFO", err, "/fifo", "named pipe")
	_, _, err = OpenRegular(good, 3)
	refused(t, "OpenRegular over the limit", err, "/good", "over the limit of 3")
}

func TestReadAllGrown(t *testing.T) {
	dir := t.TempDir()
	path := file(t, dir, "grows", "12345", 0o644)
	f, _, err := Open(path, 5)
	must(t, err)
	defer f.Close()
	// The file grows after it was checked.
	must(t, os.WriteFile(path, []byte("1234567890"), 0o644))
	_, err = ReadAll(f, 5)
	refused(t, "a file grown after the check", err, "/grows", "longer than the limit of 5 bytes")
}

func TestOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := t.TempDir()
	path := file(t, dir, "theirs", "x", 0o644)
	must(t, os.Chown(path, nobody, nobody))
	_, err := ReadFile(path, -1)
	refused(t, "a file of another user", err, "/theirs", "owned by uid 65534, not by root")
	_, _, err = CheckPath(path)
	refused(t, "CheckPath of a file of another user", err, "/theirs", "owned by uid 65534")

	// A symbolic link of another user, to a trusted file.
	good := file(t, dir, "good", "x", 0o755)
	link := filepath.Join(dir, "theirlink")
	must(t, os.Symlink(good, link))
	must(t, os.Lchown(link, nobody, nobody))
	_, _, err = CheckPath(link)
	refused(t, "a symbolic link of another user", err, "/theirlink", "a symbolic link owned by uid 65534")

	// A directory of another user on the way.
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	file(t, sub, "plugin", "x", 0o755)
	must(t, os.Chown(sub, nobody, nobody))
	_, _, err = CheckPath(filepath.Join(sub, "plugin"))
	refused(t, "a file in a directory of another user", err, "/sub", "owned by uid 65534")
	_, err = CheckDir(sub)
	refused(t, "CheckDir of a directory of another user", err, "/sub", "owned by uid 65534")
}

func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	exe := file(t, dir, "exe", "#!/bin/sh\n", 0o755)
	real, fi, err := CheckPath(exe)
	if err != nil || real != exe || fi.Size() != 10 {
		t.Errorf("CheckPath of a trusted file: %q, %v", real, err)
	}
	// Through a relative symbolic link, a "..", a symlinked directory.
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	must(t, os.Symlink("../exe", filepath.Join(sub, "rel")))
	must(t, os.Symlink(sub, filepath.Join(dir, "sublink")))
	for _, p := range []string{filepath.Join(sub, "rel"), filepath.Join(dir, "sublink", "rel"), filepath.Join(sub, "..", "exe")} {
		if real, _, err := CheckPath(p); err != nil || real != exe {
			t.Errorf("CheckPath(%s) = %q, %v; want %s", p, real, err, exe)
		}
	}
	// A directory anyone may write on the way, with and without the
	// sticky bit.
	open := filepath.Join(dir, "open")
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Chmod(open, 0o777))
	_, _, err = CheckPath(file(t, open, "exe", "x", 0o755))
	refused(t, "a file in a directory anyone may write", err, "/open", "writable by its group or others (mode drwxrwxrwx)")
	link := filepath.Join(dir, "viaopen")
	must(t, os.Symlink(filepath.Join(open, "exe"), link))
	_, _, err = CheckPath(link)
	refused(t, "a symbolic link to a file in a directory anyone may write", err, "/open", "writable by its group or others")
	must(t, os.Chmod(open, 0o777|fs.ModeSticky))
	if _, _, err := CheckPath(filepath.Join(open, "exe")); err != nil {
		t.Errorf("a file in a sticky directory anyone may write: %v", err)
	}
	_, _, err = CheckPath(file(t, dir, "groupw", "x", 0o775))
	refused(t, "a group-writable file", err, "/groupw", "writable by its group or others")
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	_, _, err = CheckPath(filepath.Join(dir, "fifo"))
	refused(t, "a FIFO", err, "/fifo", "named pipe")
	loop := filepath.Join(dir, "loop")
	must(t, os.Symlink(loop, loop))
	_, _, err = CheckPath(loop)
	refused(t, "a symbolic link loop", err, "/loop", "more than 40 symbolic links")
	if _, _, err := CheckPath(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckPath of a missing file: %v, want ErrNotExist", err)
	}
	if _, _, err := CheckPath(filepath.Join(exe, "x")); err == nil {
		t.Error("CheckPath through a file: no error")
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	if real, err := CheckDir(dir); err != nil || real != dir {
		t.Errorf("CheckDir of a trusted directory: %q, %v", real, err)
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(dir, link))
	if real, err := CheckDir(link); err != nil || real != dir {
		t.Errorf("CheckDir through a symbolic link: %q, %v", real, err)
	}
	sticky := filepath.Join(dir, "sticky")
	must(t, os.Mkdir(sticky, 0o755))
	must(t, os.Chmod(sticky, 0o777|fs.ModeSticky))
	_, err := CheckDir(sticky)
	refused(t, "CheckDir of a sticky directory anyone may write", err, "/sticky", "writable by its group or others")
	if _, err := CheckParent(sticky); err != nil {
		t.Errorf("CheckParent of a sticky directory anyone may write: %v", err)
	}
	inner := filepath.Join(sticky, "inner")
	must(t, os.Mkdir(inner, 0o700))
	if _, err := CheckDir(inner); err != nil {
		t.Errorf("CheckDir of a directory in a sticky one: %v", err)
	}
	groupw := filepath.Join(dir, "groupw")
	must(t, os.Mkdir(groupw, 0o755))
	must(t, os.Chmod(groupw, 0o775))
	_, err = CheckParent(groupw)
	refused(t, "CheckParent of a group-writable directory", err, "/groupw", "writable by its group or others")
	_, err = CheckDir(file(t, dir, "file", "", 0o644))
	refused(t, "CheckDir of a file", err, "/file", "a regular file, not a directory")
}

// TestReadAllOneAllocation checks that a file is read into a buffer of
// its size: one allocation, whatever its length (io.ReadAll grows a
// buffer from 512 bytes, some twenty allocations for a few MB), and that
// the bytes are the file's, with or without a limit.
func TestReadAllOneAllocation(t *testing.T) {
	content := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	path := file(t, t.TempDir(), "big", content, 0o644)
	opening := testing.AllocsPerRun(5, func() {
		f, _, err := Open(path, -1)
		must(t, err)
		f.Close()
	})
	for _, max := range []int64{-1, int64(len(content)), 1 << 30} {
		var b []byte
		allocs := testing.AllocsPerRun(5, func() {
			f, _, err := Open(path, max)
			must(t, err)
			defer f.Close()
			b, err = ReadAll(f, max)
			must(t, err)
		}) - opening
		if string(b) != content {
			t.Fatalf("max %d: read %d bytes, not the file's %d", max, len(b), len(content))
		}
		// The buffer, ReadAll's Stat and the closure: 3; io.ReadAll's
		// growing buffer took 25 for 1 MiB.
		if allocs > 4 {
			t.Errorf("max %d: %.0f allocations to read 1 MiB; want the buffer allocated once", max, allocs)
		}
	}
}
