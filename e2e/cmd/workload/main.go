// Command workload is the e2e suite's test container: a static program
// that prints its environment to stdout (the container log), then sleeps
// until SIGTERM or SIGINT and exits 0. The suite inspects the running
// process through /proc/PID on the host.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("workload started, pid", os.Getpid())
	for _, kv := range os.Environ() {
		fmt.Println("env", kv)
	}
	<-sig
	fmt.Println("workload stopping")
}
