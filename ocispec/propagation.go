package ocispec

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
)

// CheckHostPropagation is a propagation checker for WithPropagationChecker
// that, like upstream's generator, reads the host's mount table
// (/proc/self/mountinfo) and accepts an "rshared" mount only if its
// source lives on a shared mount, and an "rslave" mount only if the source
// lives on a shared or slave mount.
func CheckHostPropagation(source, propagation string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("checking mount propagation of %q: %w", source, err)
	}
	defer f.Close()
	return checkPropagationIn(f, source, propagation)
}

// checkPropagationIn checks source's propagation against the mount table
// in mountinfo format read from r.
func checkPropagationIn(r io.Reader, source, propagation string) error {
	have, err := hostPropagation(r, source)
	if err != nil {
		return fmt.Errorf("checking mount propagation of %q: %w", source, err)
	}
	accepted := []string{propShared}
	if propagation == propSlave {
		accepted = append(accepted, propSlave)
	}
	for _, a := range accepted {
		if have == a {
			return nil
		}
	}
	if have == "" {
		have = "private"
	}
	return fmt.Errorf("mount %q needs %s propagation, but the host mount it is on is %s", source, propagation, have)
}

// hostPropagation returns the propagation ("rshared", "rslave" or "") of
// the mount p lives on, from a mount table in mountinfo format.
func hostPropagation(r io.Reader, p string) (string, error) {
	p = path.Clean(p)
	best, prop := -1, ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		mp := unescapeMountPoint(fields[4])
		if !isParentPath(mp, p) || len(mp) <= best {
			continue
		}
		best, prop = len(mp), ""
	optional:
		for _, opt := range fields[6:] {
			switch {
			case opt == "-":
				break optional
			case strings.HasPrefix(opt, "shared:"):
				prop = propShared
				break optional
			case strings.HasPrefix(opt, "master:"):
				prop = propSlave
				break optional
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if best < 0 {
		return "", fmt.Errorf("no mount found for %q", p)
	}
	return prop, nil
}

// isParentPath reports whether dir is p or one of its ancestors.
func isParentPath(dir, p string) bool {
	return dir == p || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// unescapeMountPoint undoes mountinfo's octal escapes ("\040" for a space).
func unescapeMountPoint(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
