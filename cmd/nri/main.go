// Command nri shows the Node Resource Interface working end to end without
// containerd or Kubernetes: `nri run` plays a scenario of pods and
// containers through nrikit's runtime library with real plugin processes
// over real sockets, and prints what every plugin did; `nri serve` does the
// same for external plugins that connect to a socket; `nri plugin NAME`
// runs one of the sample plugins built into the binary.
//
// Exit codes, one per kind of mistake (docs/cli.md): 0 success; 1 a step
// did not go as the scenario expects (a refusal it does not expect
// included); 2 usage error (a file named on the command line that cannot
// be read included); 3 a file's content is invalid (the scenario, a
// policy file); 4 a plugin did not register or was lost during the run,
// or `nri serve` did not get the plugins it waited for; 5 any other error
// (such as a socket that cannot be created); 6 `nri check`: a
// conformance check failed; 130 interrupted; 141 the reader of the output
// went away (as a process ended by SIGPIPE).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A write to a closed pipe (nri run | head -1) must fail with EPIPE,
	// not kill the process before it stopped its plugins and removed its
	// work directory: notified, SIGPIPE no longer ends the program.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(pipe)
	stop()
	os.Exit(code)
}
