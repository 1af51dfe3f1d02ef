// Command apidiff runs package apidiff: it compares the packages named by
// its arguments (paths in -module; "." for its root) as the module in
// the working directory resolves them with those the module in -other
// resolves, for each -platforms entry, and writes one JSON object a line:
// {"platform", "key", "what"} per finding and {"platform", "unbuilt",
// "why"} per package upstream does not build there.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nrikit/nrikit/interop/internal/apidiff"
)

func main() {
	module := flag.String("module", "github.com/containerd/nri", "the module path both modules provide")
	other := flag.String("other", "", "directory of the module to compare with the working directory's")
	platforms := flag.String("platforms", "linux/amd64", "comma-separated GOOS/GOARCH list")
	flag.Parse()
	if err := run(*module, *other, *platforms, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(module, other, platforms string, args []string) error {
	if other == "" || len(args) == 0 {
		return fmt.Errorf("usage: apidiff -other DIR [-module PATH] [-platforms LIST] PACKAGE [PACKAGE ...]")
	}
	rels := make([]string, len(args))
	for i, a := range args {
		if a != "." {
			rels[i] = a
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, s := range strings.Split(platforms, ",") {
		p, err := apidiff.ParsePlatform(s)
		if err != nil {
			return err
		}
		res, err := apidiff.Diff(module, rels, ".", other, p)
		if err != nil {
			return err
		}
		for _, f := range res.Findings {
			if err := enc.Encode(map[string]string{"platform": p.String(), "key": f.Key, "what": f.What}); err != nil {
				return err
			}
		}
		for rel, why := range res.Unbuilt {
			if rel == "" {
				rel = "."
			}
			if err := enc.Encode(map[string]string{"platform": p.String(), "unbuilt": rel, "why": why}); err != nil {
				return err
			}
		}
	}
	return nil
}
