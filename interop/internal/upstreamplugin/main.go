// Command upstreamplugin is an NRI plugin built with containerd/nri
// v0.12.5's pkg/stub, for the interoperability tests. What it does is
// selected by -mode (see package behavior); it records every request it
// handles and every answer it sends in the file given with -record.
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

	uapi "github.com/containerd/nri/pkg/api"
	ustub "github.com/containerd/nri/pkg/stub"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
	"github.com/nrikit/nrikit/interop/internal/record"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "upstreamplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	mode := flag.String("mode", string(behavior.Observe), "behavior (see package behavior)")
	recPath := flag.String("record", "", "file to append records to")
	socket := flag.String("socket", "", "runtime socket to dial (external plugins)")
	name := flag.String("name", "upstream", "plugin name (external plugins)")
	idx := flag.String("idx", "50", "plugin index (external plugins)")
	unsolicited := flag.Bool("unsolicited", false, "send unsolicited container updates after registering")
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

	var opts []ustub.Option
	if os.Getenv(uapi.PluginSocketEnvVar) == "" {
		opts = append(opts, ustub.WithSocketPath(*socket), ustub.WithPluginName(*name), ustub.WithPluginIdx(*idx))
	}
	p := &plugin{b: b, rec: rec}
	s, err := ustub.New(p, opts...)
	if err != nil {
		return fmt.Errorf("creating stub: %w", err)
	}
	if os.Getenv(uapi.PluginSocketEnvVar) != "" {
		rec.SetPlugin(os.Getenv(uapi.PluginIdxEnvVar) + "-" + os.Getenv(uapi.PluginNameEnvVar))
	} else {
		rec.SetPlugin(*idx + "-" + *name)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = s.Start(ctx)
	rec.Add("Start", nil, nil, err)
	if err != nil {
		return fmt.Errorf("starting stub: %w", err)
	}
	if *unsolicited {
		req, cerr := protodiff.Convert(&api.UpdateContainersRequest{Update: b.Unsolicited()}, &uapi.UpdateContainersRequest{})
		if cerr != nil {
			return cerr
		}
		failed, uerr := s.UpdateContainers(req.Update)
		rec.Add("UpdateContainers", req, &uapi.UpdateContainersResponse{Failed: failed}, uerr)
	}
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		<-done
	}
	return nil
}

// plugin implements every handler of upstream's stub by delegating to a
// Behavior.
type plugin struct {
	b   *behavior.Behavior
	rec *record.Writer
}

// convert returns m's wire encoding decoded into dst.
func convert[D proto.Message](m proto.Message, dst D) (D, error) { return protodiff.Convert(m, dst) }

func (p *plugin) event(name string, req proto.Message) error {
	return p.rec.Add(name, req, nil, nil)
}

func (p *plugin) Configure(_ context.Context, config, runtime, version string) (uapi.EventMask, error) {
	p.rec.Add("Configure", &uapi.ConfigureRequest{Config: config, RuntimeName: runtime, RuntimeVersion: version}, nil, nil)
	return uapi.EventMask(p.b.Subscription()), nil
}

func (p *plugin) Synchronize(ctx context.Context, pods []*uapi.PodSandbox, ctrs []*uapi.Container) ([]*uapi.ContainerUpdate, error) {
	ureq := &uapi.SynchronizeRequest{Pods: pods, Containers: ctrs}
	req, err := convert(ureq, &api.SynchronizeRequest{})
	if err != nil {
		return nil, err
	}
	upd, err := p.b.Synchronize(ctx, req.Pods, req.Containers)
	rsp, cerr := convert(&api.SynchronizeResponse{Update: upd}, &uapi.SynchronizeResponse{})
	if cerr != nil {
		return nil, cerr
	}
	p.rec.Add("Synchronize", ureq, rsp, err)
	return rsp.Update, err
}

func (p *plugin) Shutdown(context.Context) { p.rec.Add("Shutdown", nil, nil, nil) }

func (p *plugin) RunPodSandbox(_ context.Context, pod *uapi.PodSandbox) error {
	return p.event("RunPodSandbox", &uapi.RunPodSandboxRequest{Pod: pod})
}

func (p *plugin) UpdatePodSandbox(_ context.Context, pod *uapi.PodSandbox, overhead, res *uapi.LinuxResources) error {
	return p.event("UpdatePodSandbox", &uapi.UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: overhead, LinuxResources: res})
}

func (p *plugin) PostUpdatePodSandbox(_ context.Context, pod *uapi.PodSandbox) error {
	return p.event("PostUpdatePodSandbox", &uapi.PostUpdatePodSandboxRequest{Pod: pod})
}

func (p *plugin) StopPodSandbox(_ context.Context, pod *uapi.PodSandbox) error {
	return p.event("StopPodSandbox", &uapi.StopPodSandboxRequest{Pod: pod})
}

func (p *plugin) RemovePodSandbox(_ context.Context, pod *uapi.PodSandbox) error {
	return p.event("RemovePodSandbox", &uapi.RemovePodSandboxRequest{Pod: pod})
}

func (p *plugin) CreateContainer(ctx context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) (*uapi.ContainerAdjustment, []*uapi.ContainerUpdate, error) {
	ureq := &uapi.CreateContainerRequest{Pod: pod, Container: ctr}
	req, err := convert(ureq, &api.CreateContainerRequest{})
	if err != nil {
		return nil, nil, err
	}
	adj, upd, _, err := p.b.CreateContainer(ctx, req.Pod, req.Container) // upstream's stub cannot evict
	rsp, cerr := convert(&api.CreateContainerResponse{Adjust: adj, Update: upd}, &uapi.CreateContainerResponse{})
	if cerr != nil {
		return nil, nil, cerr
	}
	p.rec.Add("CreateContainer", ureq, rsp, err)
	return rsp.Adjust, rsp.Update, err
}

func (p *plugin) PostCreateContainer(_ context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) error {
	return p.event("PostCreateContainer", &uapi.PostCreateContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) StartContainer(_ context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) error {
	return p.event("StartContainer", &uapi.StartContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) PostStartContainer(_ context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) error {
	return p.event("PostStartContainer", &uapi.PostStartContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) UpdateContainer(ctx context.Context, pod *uapi.PodSandbox, ctr *uapi.Container, res *uapi.LinuxResources) ([]*uapi.ContainerUpdate, error) {
	ureq := &uapi.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res}
	req, err := convert(ureq, &api.UpdateContainerRequest{})
	if err != nil {
		return nil, err
	}
	upd, _, err := p.b.UpdateContainer(ctx, req.Pod, req.Container, req.LinuxResources)
	rsp, cerr := convert(&api.UpdateContainerResponse{Update: upd}, &uapi.UpdateContainerResponse{})
	if cerr != nil {
		return nil, cerr
	}
	p.rec.Add("UpdateContainer", ureq, rsp, err)
	return rsp.Update, err
}

func (p *plugin) PostUpdateContainer(_ context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) error {
	return p.event("PostUpdateContainer", &uapi.PostUpdateContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) StopContainer(ctx context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) ([]*uapi.ContainerUpdate, error) {
	ureq := &uapi.StopContainerRequest{Pod: pod, Container: ctr}
	req, err := convert(ureq, &api.StopContainerRequest{})
	if err != nil {
		return nil, err
	}
	upd, err := p.b.StopContainer(ctx, req.Pod, req.Container)
	rsp, cerr := convert(&api.StopContainerResponse{Update: upd}, &uapi.StopContainerResponse{})
	if cerr != nil {
		return nil, cerr
	}
	p.rec.Add("StopContainer", ureq, rsp, err)
	return rsp.Update, err
}

func (p *plugin) RemoveContainer(_ context.Context, pod *uapi.PodSandbox, ctr *uapi.Container) error {
	return p.event("RemoveContainer", &uapi.RemoveContainerRequest{Pod: pod, Container: ctr})
}

func (p *plugin) ValidateContainerAdjustment(ctx context.Context, ureq *uapi.ValidateContainerAdjustmentRequest) error {
	req, err := convert(ureq, &api.ValidateContainerAdjustmentRequest{})
	if err != nil {
		return err
	}
	verr := p.b.Validate(ctx, req)
	p.rec.Add("ValidateContainerAdjustment", ureq, nil, verr)
	return verr
}
