// Command plugin is written as upstream's example plugins are (its
// logger in particular), against containerd/nri v0.12.5's pkg/stub: it
// implements every handler interface, logs through pkg/log and the
// stub's logger, and reads pod annotations with pkg/plugin. The tests of
// package compatstub build it on upstream's module and on compat/nri and
// compare what the two builds do. It reports on standard output, one
// line each: "new-error: ERR" if stub.New fails, "update-error: ERR" for
// UpdateContainers called before the plugin started, "hook" when the
// OnClose hook runs, "run-returned: ERR" when Run returns, and the name
// of each request it handles.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/plugin"
	"github.com/containerd/nri/pkg/stub"
)

type handlers struct {
	stub stub.Stub
	log  nrilog.Logger
}

// Every handler interface, checked at compile time.
var (
	_ stub.Plugin                               = &handlers{}
	_ stub.ConfigureInterface                   = &handlers{}
	_ stub.SynchronizeInterface                 = &handlers{}
	_ stub.ShutdownInterface                    = &handlers{}
	_ stub.RunPodInterface                      = &handlers{}
	_ stub.UpdatePodInterface                   = &handlers{}
	_ stub.PostUpdatePodInterface               = &handlers{}
	_ stub.StopPodInterface                     = &handlers{}
	_ stub.RemovePodInterface                   = &handlers{}
	_ stub.CreateContainerInterface             = &handlers{}
	_ stub.PostCreateContainerInterface         = &handlers{}
	_ stub.StartContainerInterface              = &handlers{}
	_ stub.PostStartContainerInterface          = &handlers{}
	_ stub.UpdateContainerInterface             = &handlers{}
	_ stub.PostUpdateContainerInterface         = &handlers{}
	_ stub.StopContainerInterface               = &handlers{}
	_ stub.RemoveContainerInterface             = &handlers{}
	_ stub.ValidateContainerAdjustmentInterface = &handlers{}
)

// out serializes the report lines.
var out sync.Mutex

func report(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf(format+"\n", args...)
}

func (h *handlers) seen(ctx context.Context, request string) {
	h.log.Infof(ctx, "plugin %s: %s", "compatstub", request)
	report("%s", request)
}

func (h *handlers) Configure(ctx context.Context, config, runtime, version string) (stub.EventMask, error) {
	h.seen(ctx, "Configure")
	return api.ParseEventMask("all")
}

func (h *handlers) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	h.seen(ctx, "Synchronize")
	return nil, nil
}

func (h *handlers) Shutdown(ctx context.Context) { h.seen(ctx, "Shutdown") }

func (h *handlers) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	h.seen(ctx, "RunPodSandbox")
	return nil
}

func (h *handlers) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error {
	h.seen(ctx, "UpdatePodSandbox")
	return nil
}

func (h *handlers) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	h.seen(ctx, "PostUpdatePodSandbox")
	return nil
}

func (h *handlers) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	h.seen(ctx, "StopPodSandbox")
	return nil
}

func (h *handlers) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	h.seen(ctx, "RemovePodSandbox")
	return nil
}

func (h *handlers) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	h.seen(ctx, "CreateContainer")
	adjust := &api.ContainerAdjustment{}
	if v, ok := plugin.GetEffectiveAnnotation(pod, "env.compatstub."+plugin.AnnotationDomain, ctr.GetName()); ok {
		adjust.AddEnv("COMPATSTUB", v)
	}
	return adjust, nil, nil
}

func (h *handlers) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	h.seen(ctx, "PostCreateContainer")
	return nil
}

func (h *handlers) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	h.seen(ctx, "StartContainer")
	return nil
}

func (h *handlers) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	h.seen(ctx, "PostStartContainer")
	return nil
}

func (h *handlers) UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	h.seen(ctx, "UpdateContainer")
	return nil, nil
}

func (h *handlers) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	h.seen(ctx, "PostUpdateContainer")
	return nil
}

func (h *handlers) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	h.seen(ctx, "StopContainer")
	return nil, nil
}

func (h *handlers) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	h.seen(ctx, "RemoveContainer")
	return nil
}

func (h *handlers) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	h.seen(ctx, "ValidateContainerAdjustment")
	return nil
}

// stderrLogger is a pkg/log Logger writing to standard error.
type stderrLogger struct{}

func (stderrLogger) Debugf(_ context.Context, f string, a ...any) { logf("D", f, a...) }
func (stderrLogger) Infof(_ context.Context, f string, a ...any)  { logf("I", f, a...) }
func (stderrLogger) Warnf(_ context.Context, f string, a ...any)  { logf("W", f, a...) }
func (stderrLogger) Errorf(_ context.Context, f string, a ...any) { logf("E", f, a...) }

func logf(level, format string, args ...any) {
	fmt.Fprintf(os.Stderr, level+" "+format+"\n", args...)
}

func main() {
	name := flag.String("name", "", "stub.WithPluginName, if set")
	idx := flag.String("idx", "", "stub.WithPluginIdx, if set")
	hook := flag.String("hook", "report", "what the OnClose hook does: report, or exit (report, then exit 0, as memory-qos does)")
	linger := flag.Duration("linger", 0, "how long to wait after Run returned before exiting (to let a late hook report)")
	flag.Parse()

	h := &handlers{}
	opts := []stub.Option{stub.WithLogger(stderrLogger{})}
	if *name != "" {
		opts = append(opts, stub.WithPluginName(*name))
	}
	if *idx != "" {
		opts = append(opts, stub.WithPluginIdx(*idx))
	}
	opts = append(opts, stub.WithOnClose(func() {
		report("hook")
		if *hook == "exit" {
			os.Exit(0)
		}
	}))
	s, err := stub.New(h, opts...)
	if err != nil {
		report("new-error: %v", err)
		os.Exit(2)
	}
	h.stub, h.log = s, s.Logger()
	if _, err := s.UpdateContainers(nil); err != nil {
		report("update-error: %v", err)
	}
	err = s.Run(context.Background())
	report("run-returned: %v", err)
	time.Sleep(*linger)
	if err != nil {
		os.Exit(3)
	}
}
