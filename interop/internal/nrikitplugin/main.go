// Command nrikitplugin is an NRI plugin built with nrikit's stub, for the
// interoperability tests against upstream's runtime. What it does is
// selected by -mode (see package behavior); it records every request it
// handles and every answer it sends in the file given with -record.
// -scope, -request-timeout and -opt-out exercise nrikit's extensions,
// which an upstream runtime ignores.
//
// Launched by a runtime it takes its socket and identity from the
// environment; otherwise it dials -socket as -idx-name.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/record"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nrikitplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	mode := flag.String("mode", string(behavior.Observe), "behavior (see package behavior)")
	recPath := flag.String("record", "", "file to append records to")
	socket := flag.String("socket", "", "runtime socket to dial (external plugins)")
	name := flag.String("name", "nrikit", "plugin name (external plugins)")
	idx := flag.String("idx", "60", "plugin index (external plugins)")
	unsolicited := flag.Bool("unsolicited", false, "send unsolicited container updates after registering")
	scope := flag.String("scope", "", "limit the plugin to pods in this namespace glob (nrikit extension)")
	reqTimeout := flag.Duration("request-timeout", 0, "ask for this request timeout (nrikit extension)")
	optOut := flag.Bool("opt-out", false, "opt out of the pod and container in RunPodSandbox and CreateContainer (nrikit extension)")
	flag.Parse()

	b, err := behavior.New(*mode)
	if err != nil {
		return err
	}
	rec, err := record.Create(*recPath, "")
	if err != nil {
		return err
	}
	defer rec.Close()

	opts := []stub.Option{stub.WithPluginName(*name), stub.WithPluginIdx(*idx)}
	if *socket != "" {
		opts = append(opts, stub.WithSocketPath(*socket))
	}
	if *scope != "" {
		opts = append(opts, stub.WithScope(&api.PluginScope{Namespaces: []string{*scope}}))
	}
	if *reqTimeout > 0 {
		opts = append(opts, stub.WithRequestTimeout(*reqTimeout))
	}
	p := &plugin{b: b, rec: rec, optOut: *optOut}
	s, err := stub.New(p, opts...)
	if err != nil {
		return fmt.Errorf("creating stub: %w", err)
	}
	rec.SetPlugin(s.Name())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = s.Start(ctx)
	rec.Add("Start", &api.ConfigureRequest{RuntimeName: s.RuntimeName(), RuntimeVersion: s.RuntimeVersion(),
		NRIVersion: s.RuntimeNRIVersion(), RequestTimeout: s.RequestTimeout().Milliseconds()},
		&api.ConfigureResponse{Events: int32(s.Subscription())}, err)
	if err != nil {
		return fmt.Errorf("starting stub: %w", err)
	}
	if *unsolicited {
		req := &api.UpdateContainersRequest{Update: b.Unsolicited()}
		uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		failed, uerr := s.UpdateContainers(uctx, req.Update, nil)
		cancel()
		rec.Add("UpdateContainers", req, &api.UpdateContainersResponse{Failed: failed}, uerr)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Stop()
		err = <-done
	}
	rec.Add("Exit", nil, nil, err)
	return nil
}

// plugin implements every handler of nrikit's stub (the evicting variants
// of CreateContainer and UpdateContainer) by delegating to a Behavior.
type plugin struct {
	b      *behavior.Behavior
	rec    *record.Writer
	optOut bool
}

func (p *plugin) event(name string, req proto.Message) error {
	return p.rec.Add(name, req, nil, nil)
}

func (p *plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	p.rec.Add("Configure", &api.ConfigureRequest{Config: config, RuntimeName: runtime, RuntimeVersion: version}, nil, nil)
	return p.b.Subscription(), nil
}

func (p *plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	upd, err := p.b.Synchronize(ctx, pods, ctrs)
	p.rec.Add("Synchronize", &api.SynchronizeRequest{Pods: pods, Containers: ctrs}, &api.SynchronizeResponse{Update: upd}, err)
	return upd, err
}

func (p *plugin) Shutdown(context.Context) { p.rec.Add("Shutdown", nil, nil, nil) }

func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.event("RunPodSandbox", &api.RunPodSandboxRequest{Pod: pod})
	if p.optOut {
		return stub.ErrNotInterestedInPod
	}
	return nil
}

func (p *plugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, overhead, res *api.LinuxResources) error {
	return p.event("UpdatePodSandbox", &api.UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: overhead, LinuxResources: res})
}

func (p *plugin) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.event("PostUpdatePodSandbox", &api.PostUpdatePodSandboxRequest{Pod: pod})
}

func (p *plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.event("StopPodSandbox", &api.StopPodSandboxRequest{Pod: pod})
}

func (p *plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.event("RemovePodSandbox", &api.RemovePodSandboxRequest{Pod: pod})
}

func (p *plugin) CreateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	adj, upd, evict, err := p.b.CreateContainer(ctx, pod, ctr)
	p.rec.Add("CreateContainer", &api.CreateContainerRequest{Pod: pod, Container: ctr},
		&api.CreateContainerResponse{Adjust: adj, Update: upd, Evict: evict}, err)
	if err == nil && p.optOut {
		err = stub.ErrNotInterestedInContainer
	}
	return adj, upd, evict, err
}

func (p *plugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.event("PostCreateContainer", &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.event("StartContainer", &api.StartContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.event("PostStartContainer", &api.PostStartContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) UpdateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	upd, evict, err := p.b.UpdateContainer(ctx, pod, ctr, res)
	p.rec.Add("UpdateContainer", &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res},
		&api.UpdateContainerResponse{Update: upd, Evict: evict}, err)
	return upd, evict, err
}

func (p *plugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.event("PostUpdateContainer", &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	upd, err := p.b.StopContainer(ctx, pod, ctr)
	p.rec.Add("StopContainer", &api.StopContainerRequest{Pod: pod, Container: ctr}, &api.StopContainerResponse{Update: upd}, err)
	return upd, err
}

func (p *plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.event("RemoveContainer", &api.RemoveContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	err := p.b.Validate(ctx, req)
	p.rec.Add("ValidateContainerAdjustment", req, nil, err)
	return err
}
