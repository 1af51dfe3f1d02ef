//go:build unix

package policy

import (
	"fmt"
	"strings"
	"syscall"
)

// maxSymlinks bounds the symbolic links followed in one lookup, as Linux
// does.
const maxSymlinks = 40

// lookupHost looks p (absolute, clean) up on this host as the kernel will
// when the OCI runtime mounts it, and returns the path it reaches and
// whether that exists. The lookup starts at dir, the lookup of p[:n]
// already made (dir "/" and n 0 to start at the root; missing if dir does
// not exist), and goes on one name at a time, following every symbolic
// link (an absolute target from the root, a relative one from the link's
// directory, ".." to the parent of the directory reached). From the first
// name that does not exist, the rest is taken as written, cleaned: the
// runtime's mount fails unless it is created meanwhile. A lookup through
// a file that is not a directory, or through more than 40 symbolic links,
// is an error, as it is for the kernel. While no symbolic link is met the
// names of p are looked up in place, without copies.
func lookupHost(p string, n int, dir string, missing bool) (string, bool, error) {
	if dir == "/" {
		dir = ""
	}
	cur, rest := dir, p[n:] // cur: the directory reached, "" for the root
	aligned := cur == p[:n] // cur is a prefix of p, and rest the rest of it
	links := 0
	var st syscall.Stat_t
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			break
		}
		start := len(p) - len(rest) // where name is in p, if aligned
		name, after, _ := strings.Cut(rest, "/")
		rest = after
		switch name {
		case ".":
			aligned = false
			continue
		case "..":
			if i := strings.LastIndexByte(cur, '/'); i >= 0 {
				cur = cur[:i]
			}
			aligned = false
			continue
		}
		var next string
		if aligned {
			next = p[:start+len(name)]
		} else {
			next = cur + "/" + name
		}
		if missing {
			cur = next
			continue
		}
		err := syscall.Lstat(next, &st)
		switch {
		case err == syscall.ENOENT:
			missing, cur = true, next
			continue
		case err != nil:
			return "", false, fmt.Errorf("%s: %w", next, err)
		case st.Mode&syscall.S_IFMT == syscall.S_IFLNK:
			if links++; links > maxSymlinks {
				return "", false, fmt.Errorf("more than %d symbolic links", maxSymlinks)
			}
			target, err := readlink(next)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", next, err)
			}
			if strings.HasPrefix(target, "/") {
				cur = ""
			}
			rest, aligned = target+"/"+rest, false
			continue
		case st.Mode&syscall.S_IFMT != syscall.S_IFDIR && strings.Trim(rest, "/") != "":
			return "", false, fmt.Errorf("%s is not a directory", next)
		}
		cur = next
	}
	if cur == "" {
		return "/", missing, nil
	}
	return cur, missing, nil
}

// readlink returns the target of the symbolic link at p.
func readlink(p string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := syscall.Readlink(p, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
