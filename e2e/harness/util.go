package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// permanentError stops Eventually at once.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot fix: Eventually
// returns it at once.
func Permanent(err error) error { return permanentError{err} }

// Eventually calls f every 100ms until it returns nil, returns a
// Permanent error, timeout passes or ctx is done, and then returns f's
// last error.
func Eventually(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		var perm permanentError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &perm):
			return perm.err
		case time.Now().After(deadline):
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func goarch() string { return runtime.GOARCH }

// shimPids returns the processes of containerd-shim-runc-v2 serving the
// containerd at address (their command line has `-address ADDRESS`).
func shimPids(address string) []int {
	return processes(func(args []string) bool {
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			return false
		}
		for i := 0; i+1 < len(args); i++ {
			if strings.TrimLeft(args[i], "-") == "address" && args[i+1] == address {
				return true
			}
		}
		return false
	})
}

// processesWithArg returns the processes of the program named name whose
// command line has an argument holding substr.
func processesWithArg(name, substr string) []int {
	return processes(func(args []string) bool {
		return filepath.Base(args[0]) == name && slices.ContainsFunc(args[1:], func(a string) bool { return strings.Contains(a, substr) })
	})
}

// processes returns the processes whose command line match accepts.
func processes(match func(args []string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// listening reports whether something accepts connections on the unix
// socket at path.
func listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// unmountUnder lazily unmounts every mount point under dir, deepest
// first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// listeningSockets returns the paths under prefix of the unix sockets
// process pid holds open.
func listeningSockets(pid int, prefix string) []string {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) >= 8 && inodes[f[6]] && strings.HasPrefix(f[7], prefix) {
			paths = append(paths, f[7])
		}
	}
	return paths
}

// waitGone waits up to timeout for process pid to end.
func waitGone(pid int, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitLine waits until a line of what log returns (a runtime's log) holds
// every one of wants, and returns it, trimmed; the error says what was
// waited for.
func WaitLine(ctx context.Context, timeout time.Duration, log func() string, wants ...string) (string, error) {
	var line string
	err := Eventually(ctx, timeout, func() error {
		for _, l := range strings.Split(log(), "\n") {
			if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(l, w) }) {
				line = strings.TrimSpace(l)
				return nil
			}
		}
		return fmt.Errorf("no line of the log holds all of %q", wants)
	})
	return line, err
}
