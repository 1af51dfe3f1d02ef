// Command images builds an OCI image tarball for every Go plugin under
// plugins/ (the sample plugins and the template), or for the plugins of
// any Go module (-root DIR -pkg PATTERN): a static binary on an empty base,
// run as user 65532, reproducible (the same sources, Go toolchain, version
// and SOURCE_DATE_EPOCH give the same digests).
//
// Usage, from this directory (or `make images` from the repository root):
//
//	go run . [-root ../..] [-pkg ./plugins/...] [-out ROOT/.images] [-version V] [-repo localhost/nrikit] [-arch amd64] [NAME...]
//
// For a plugin kept in a module of its own:
//
//	go run . -root ~/src/myplugin -pkg . -repo registry.example.com/team -source https://example.com/myplugin -licenses MIT -vendor example
//
// Each tarball is an OCI image layout holding one image named
// REPO/NAME:VERSION, loadable with `ctr images import NAME.tar`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	var o Options
	flag.StringVar(&o.Root, "root", "../..", "the Go module the plugins are built in: the nrikit repository root, or your plugin's module")
	pkgs := flag.String("pkg", strings.Join(DefaultPackages, ","), "package patterns, relative to ROOT and separated by commas, whose main packages are plugins (one image each, named after the package's directory)")
	flag.StringVar(&o.Out, "out", "", "directory for the image tarballs (default ROOT/.images)")
	flag.StringVar(&o.Repo, "repo", "localhost/nrikit", "image name prefix: images are REPO/NAME:VERSION")
	flag.StringVar(&o.Version, "version", "", "version label and tag (default `git describe --always` in ROOT, or dev)")
	flag.StringVar(&o.Source, "source", "https://github.com/nrikit/nrikit", "source repository label (your plugin's repository for your own plugins)")
	flag.StringVar(&o.Licenses, "licenses", "Apache-2.0", "licence label, an SPDX expression (your plugin's licence for your own plugins; \"\" for none)")
	flag.StringVar(&o.Vendor, "vendor", "nrikit", "the images' title is \"VENDOR NAME\" (\"\" for the name alone)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the binaries and images")
	flag.StringVar(&o.Go, "go", "go", "the go command")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: images [flags] [PLUGIN...]\n\nBuilds an OCI image tarball per Go plugin: each main package of -pkg in the module at -root (all unless named).\nSOURCE_DATE_EPOCH sets the creation time (default 0, the Unix epoch).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.Only = flag.Args()
	for _, p := range strings.Split(*pkgs, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.Packages = append(o.Packages, p)
		}
	}
	o.Log = os.Stderr

	root, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	o.Root = root
	if o.Out == "" {
		o.Out = filepath.Join(root, ".images")
	}
	if o.Version == "" {
		o.Version = describe(root)
	}
	if o.Created, err = sourceDate(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := Build(ctx, o)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tSIZE\tTARBALL")
	for _, r := range results {
		rel, err := filepath.Rel(root, r.Path)
		if err != nil {
			rel = r.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\n", r.Ref, r.Digest, float64(r.Size)/(1<<20), rel)
	}
	return tw.Flush()
}

// describe is `git describe --always` in root, or "dev" outside a git
// checkout.
func describe(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "dev"
}

// sourceDate parses SOURCE_DATE_EPOCH (reproducible-builds.org): seconds
// since the Unix epoch; empty means the epoch itself.
func sourceDate(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}
