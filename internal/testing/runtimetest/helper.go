package runtimetest

import (
	"fmt"
	"os"
	"sync"
)

// Tests that need another process (a plugin, a child of the code under
// test) re-execute their own test binary, all in the same way:
// HelperArgs gives the arguments that make it run the package's
// TestHelperProcess in one mode, and that test calls HelperMain, which
// never returns in the helper process. A mode that must end with a
// status of its own calls os.Exit itself.

// HelperArgs returns the command-line arguments that re-execute a test
// binary as a plugin: its TestHelperProcess runs mode with args.
func HelperArgs(mode string, args ...string) []string {
	return append([]string{"-test.run=^TestHelperProcess$", "--", mode}, args...)
}

// HelperMain is the body of a TestHelperProcess. Unless the environment
// variable env is "1" it reports false (the test binary is running its
// tests: TestHelperProcess should skip). Otherwise it runs the mode named
// by the first argument after "--" with the arguments after it and exits
// the process: with status 0, or with 1 after Say("EXIT <error>").
func HelperMain(env string, modes map[string]func(args []string) error) bool {
	if os.Getenv(env) != "1" {
		return false
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	err := fmt.Errorf("no mode given")
	if len(args) > 0 {
		if run, ok := modes[args[0]]; ok {
			err = run(args[1:])
		} else {
			err = fmt.Errorf("unknown mode %q", args[0])
		}
	}
	if err != nil {
		Say("EXIT %v", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

var sayMu sync.Mutex

// Say prints one report line of a plugin process on its standard output,
// where the test reads it.
func Say(format string, args ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}
