// Command nri shows the Node Resource Interface working end to end without
// containerd or Kubernetes: `nri run` plays a scenario of pods and
// containers through nrikit's runtime library with real plugin processes
// over real sockets, and prints what every plugin did; `nri serve` does the
// same for external plugins that connect to a socket; `nri plugin NAME`
// runs one of the sample plugins built into the binary.
//
// Exit codes: 0 success; 1 a step did not go as the scenario expects;
// 2 usage error; 3 invalid scenario file; 4 a plugin did not register, or
// `nri serve` did not get the plugins it waited for; 5 any other error
// (such as a socket that cannot be created); 130 interrupted.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
