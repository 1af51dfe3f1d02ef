// Command guest is the WASM plugin the wasmhost tests load, built with
// stub/wasmguest. What it does in CreateContainer depends on the
// container's name: "adjust" adds an environment variable, "loop" never
// returns, "scribble" writes to its memory without end, "sleep" sleeps for an hour, "panic" panics in a goroutine (which kills the guest's Go
// runtime), "handler-panic" panics in the handler (recovered by
// wasmguest), "alloc" allocates without limit, "fail" returns an error,
// "print" writes to stdout and stderr and logs through env.log, "big-output"
// writes a 16 MiB line to stdout and logs a 16 MiB message through
// env.log, "updates" asks for 1,025 container updates, "big" adds a 2 MiB
// environment variable. Shutdown prints "guest shutting down".
// Initialising, the guest logs "guest initialising" through env.log.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

type plugin struct{ configured string }

func (p *plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	p.configured = config
	return 0, nil
}

var sink [][]byte

// scribbled is what "scribble" writes to: allocated while the guest
// initialises, so that the call neither grows the memory nor asks the
// host for the time (closing a module races with both in wazero).
var scribbled = make([]byte, 1<<20)

func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	switch ctr.GetName() {
	case "loop":
		for {
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "panic":
		done := make(chan struct{})
		go func() { panic("guest goroutine panicked on purpose") }()
		<-done
	case "handler-panic":
		panic("handler panicked on purpose")
	case "scribble":
		for i := 0; ; i++ {
			scribbled[i%len(scribbled)]++
		}
	case "alloc":
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	case "fail":
		return nil, nil, errors.New("refused on purpose")
	case "print":
		fmt.Println("hello on stdout")
		fmt.Fprintln(os.Stderr, "hello on stderr")
		wasmguest.Log(api.LogRequest_LEVEL_WARN, "hello through env.log")
	case "big-output":
		big := strings.Repeat("x", 16<<20)
		fmt.Println("big line " + big)
		wasmguest.Log(api.LogRequest_LEVEL_INFO, "big message "+big)
	case "updates":
		var ups []*api.ContainerUpdate
		for i := range 1025 {
			ups = append(ups, &api.ContainerUpdate{ContainerId: fmt.Sprint("ctr-", i)})
		}
		return nil, ups, nil
	case "big":
		adj := &api.ContainerAdjustment{}
		adj.AddEnv("BIG", strings.Repeat("x", 2<<20))
		return adj, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("WASM_GUEST", "configured="+p.configured)
	return adj, nil, nil
}

func (p *plugin) RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error { return nil }

// Shutdown says so on stdout, for the tests to see that it was called.
func (p *plugin) Shutdown(context.Context) { fmt.Println("guest shutting down") }

func init() {
	wasmguest.Register(&plugin{})
	wasmguest.Log(api.LogRequest_LEVEL_DEBUG, "guest initialising")
}

func main() {}
