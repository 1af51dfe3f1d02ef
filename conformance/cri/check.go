package cri

import (
	"fmt"
	"slices"
	"strings"
)

// Need is something a check needs beyond the NRI socket, the CRI socket
// and a local image; a check whose need is not met is reported SKIP with
// the reason.
type Need string

// The needs of the checks.
const (
	// NeedHold is a plugin request timeout long enough to hold a hook
	// while the checker asks the runtime about its state (at least
	// MinHoldTimeout).
	NeedHold Need = "hold"
	// NeedExec is ExecSync and `cat` in the image, to look inside a
	// container.
	NeedExec Need = "exec"
	// NeedHostPID is the checker seeing the runtime's processes (it runs
	// on the node, in its PID namespace, as root).
	NeedHostPID Need = "host-pid"
	// NeedPodNetwork is pods with a network namespace of their own
	// (--pod-network; the runtime needs a CNI network).
	NeedPodNetwork Need = "pod-network"
	// NeedCDIDevice is a CDI device the runtime can inject (--cdi-device).
	NeedCDIDevice Need = "cdi-device"
	// NeedValidator is the runtime's default validator, enabled: it
	// enforces the plugins a pod requires.
	NeedValidator Need = "validator"
)

// Check is one entry of the checker's table: what it is called, what it
// needs, and how it decides.
type Check struct {
	// ID names the check in pod names and labels (lowercase, dashes).
	ID string
	// Name is the check as a report shows it.
	Name string
	// Needs are what the check needs beyond the sockets and the image.
	Needs []Need
	// Serial marks a check that holds the runtime's NRI (a held hook, a
	// plugin timing out): it runs alone, before the others.
	Serial bool
	// Decides says in a sentence what passes (for docs/cli.md and --help).
	Decides string

	run func(*run) verdict
}

// Checks returns the checker's table, in report order.
func Checks() []Check {
	var all []Check
	for _, group := range [][]Check{lifecycleChecks, holdChecks, errorChecks, syncChecks, adjustChecks(), updateChecks, pluginChecks} {
		all = append(all, group...)
	}
	return all
}

// verdictKind is how a check ended.
type verdictKind int

const (
	verdictPass verdictKind = iota
	verdictFail
	verdictSkip
	verdictInfo
)

// verdict is a check's outcome with its evidence.
type verdict struct {
	kind   verdictKind
	reason string
}

func pass(format string, args ...any) verdict {
	return verdict{verdictPass, fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) verdict {
	return verdict{verdictFail, fmt.Sprintf(format, args...)}
}

// info is an informational verdict: what the runtime did, never a
// failure.
func info(format string, args ...any) verdict {
	return verdict{verdictInfo, fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) verdict {
	return verdict{verdictSkip, fmt.Sprintf(format, args...)}
}

// findings collects what a check found wrong and what it saw, and makes
// the verdict: FAIL with the problems first, or PASS with the evidence.
type findings struct {
	problems []string
	seen     []string
}

func (f *findings) problem(format string, args ...any) {
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *findings) saw(format string, args ...any) {
	f.seen = append(f.seen, fmt.Sprintf(format, args...))
}

// check records a problem unless ok.
func (f *findings) check(ok bool, format string, args ...any) {
	if !ok {
		f.problem(format, args...)
	}
}

func (f *findings) verdict() verdict {
	if len(f.problems) > 0 {
		return fail("%s", strings.Join(slices.Concat(f.problems, f.seen), "; "))
	}
	return pass("%s", strings.Join(f.seen, "; "))
}
