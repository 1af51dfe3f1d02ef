// Command runc-wrap is the OCI runtime CRI-O runs in the e2e suite: it
// execs the real runtime (its first argument) with the other arguments,
// after clamping a negative process.oomScoreAdj in the bundle's
// config.json to 0 when they create a container.
//
// CRI-O gives every pod's infra container oomScoreAdj -998, hard-coded,
// and root on the suite's machines lacks CAP_SYS_RESOURCE, so runc fails
// to write it; CRI-O has no option like containerd's
// restrict_oom_score_adj. Containers are otherwise as CRI-O made them.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: runc-wrap RUNTIME [ARG...]")
		os.Exit(2)
	}
	runtime, args := os.Args[1], os.Args[2:]
	if bundle, ok := creates(args); ok {
		if err := clamp(filepath.Join(bundle, "config.json")); err != nil {
			fmt.Fprintf(os.Stderr, "runc-wrap: %v\n", err)
			os.Exit(1)
		}
	}
	err := syscall.Exec(runtime, append([]string{runtime}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-wrap: exec %s: %v\n", runtime, err)
	os.Exit(1)
}

// globalValueFlags are runc's global flags that take a value.
var globalValueFlags = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// creates reports whether args create a container (runc's command, the
// first argument that is not a global flag or its value, is create or
// run), and its bundle directory ("." if not given).
func creates(args []string) (string, bool) {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if globalValueFlags[args[i]] {
			i++
		}
	}
	if i >= len(args) || (args[i] != "create" && args[i] != "run") {
		return "", false
	}
	bundle := "."
	for i++; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			bundle = args[i+1]
			i++
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		}
	}
	return bundle, true
}

// clamp sets a negative process.oomScoreAdj in the spec at path to 0,
// leaving every other byte's meaning alone (numbers are kept exact).
func clamp(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	proc, _ := spec["process"].(map[string]any)
	n, _ := proc["oomScoreAdj"].(json.Number)
	if v, err := n.Int64(); err != nil || v >= 0 {
		return nil
	}
	proc["oomScoreAdj"] = 0
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tmp := path + ".runc-wrap"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
