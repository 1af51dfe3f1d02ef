package checkcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/conformance/cri"
	"github.com/spf13/cobra"
)

// criFlags are the flags of `check runtime` for the checks through CRI
// and the JUnit report.
type criFlags struct {
	cfg   cri.Config
	only  string
	skip  string
	junit string
}

func (c *criFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.cfg.CRISocket, "cri-socket", "", "the same runtime's CRI socket: also check the NRI contract through CRI (needs --image)")
	f.StringVar(&c.cfg.Image, "image", "", "with --cri-socket: a local image for the checker's containers (never pulled); its command must keep running")
	f.StringSliceVar(&c.cfg.Command, "command", nil, "with --cri-socket: the containers' command instead of the image's, comma-separated (e.g. sleep,3600)")
	f.BoolVar(&c.cfg.PodNetwork, "pod-network", false, "with --cri-socket: give the checker's pods their own network namespace (the runtime needs a CNI network)")
	f.StringVar(&c.cfg.CDIDevice, "cdi-device", "", "with --cri-socket: a CDI device the runtime can inject (vendor.com/class=name), for the CDI adjustment check")
	f.StringVar(&c.only, "run", "", "with --cri-socket: run only the CRI checks whose ID or name matches this regular expression")
	f.StringVar(&c.skip, "skip", "", "with --cri-socket: leave out the CRI checks whose ID or name matches this regular expression")
	f.IntVar(&c.cfg.Parallel, "parallel", cri.DefaultParallel, "with --cri-socket: how many CRI checks run at once (those that hold a hook run alone)")
	f.DurationVar(&c.cfg.CheckTimeout, "check-timeout", cri.DefaultCheckTimeout, "with --cri-socket: bound for each CRI check")
	f.StringVar(&c.junit, "junit", "", "also write the report as JUnit XML to this file")
}

// validate checks the flags' combination and compiles --run.
func (c *criFlags) validate() error {
	switch {
	case c.cfg.CRISocket == "" && (c.cfg.Image != "" || c.only != "" || c.skip != "" || c.cfg.PodNetwork || c.cfg.CDIDevice != "" || len(c.cfg.Command) > 0):
		return errors.New("--image, --command, --pod-network, --cdi-device, --run and --skip need --cri-socket")
	case c.cfg.CRISocket != "" && c.cfg.Image == "":
		return errors.New("--cri-socket needs --image: a local image for the checker's containers")
	}
	for _, f := range []struct {
		name string
		expr string
		re   **regexp.Regexp
	}{{"--run", c.only, &c.cfg.Run}, {"--skip", c.skip, &c.cfg.Skip}} {
		if f.expr == "" {
			continue
		}
		re, err := regexp.Compile(f.expr)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.re = re
	}
	return nil
}

// run appends the results of the checks through CRI to report, if
// --cri-socket was given.
func (c *criFlags) run(ctx context.Context, nriSocket string, report *conformance.Report) error {
	if c.cfg.CRISocket == "" {
		return nil
	}
	c.cfg.NRISocket = nriSocket
	r, err := cri.Run(ctx, c.cfg)
	if err != nil {
		return fmt.Errorf("checks through CRI: %w", err)
	}
	report.Results = append(report.Results, r.Results...)
	return nil
}

// writeJUnit writes the report to the --junit file, if given.
func (c *criFlags) writeJUnit(report *conformance.Report) error {
	if c.junit == "" {
		return nil
	}
	f, err := os.Create(c.junit)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := report.WriteJUnit(f, "nri check runtime"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
