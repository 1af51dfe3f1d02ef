// Package upstreamrt puts containerd/nri v0.12.5's runtime behind the
// interface the interoperability tests drive runtimes with
// (lifecycle.Runtime), converting every message through its wire
// encoding.
package upstreamrt

import (
	"context"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	uapi "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
)

// Events adapts upstream's runtime to lifecycle.Runtime, converting the
// messages through their wire encoding.
type Events struct{ *uadapt.Adaptation }

// call converts req to upstream's type U, calls f and converts its
// answer back into out (if not nil).
func call[U proto.Message, R proto.Message](req proto.Message, ureq U, out R, f func(U) (proto.Message, error)) (R, error) {
	var zero R
	u, err := protodiff.Convert(req, ureq)
	if err != nil {
		return zero, err
	}
	rsp, err := f(u)
	if err != nil {
		return zero, err
	}
	return protodiff.Convert(rsp, out)
}

// notify converts req to upstream's type U and calls f.
func notify[U proto.Message](req proto.Message, ureq U, f func(U) error) error {
	u, err := protodiff.Convert(req, ureq)
	if err != nil {
		return err
	}
	return f(u)
}

// RunPodSandbox converts req to upstream's type and passes it to upstream's RunPodSandbox.
func (e Events) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) error {
	return notify(req, &uapi.RunPodSandboxRequest{}, func(u *uapi.RunPodSandboxRequest) error { return e.Adaptation.RunPodSandbox(ctx, u) })
}

// UpdatePodSandbox converts req to upstream's type and passes it to upstream's UpdatePodSandbox.
func (e Events) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) error {
	return notify(req, &uapi.UpdatePodSandboxRequest{}, func(u *uapi.UpdatePodSandboxRequest) error {
		_, err := e.Adaptation.UpdatePodSandbox(ctx, u)
		return err
	})
}

// PostUpdatePodSandbox converts req to upstream's type and passes it to upstream's PostUpdatePodSandbox.
func (e Events) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) error {
	return notify(req, &uapi.PostUpdatePodSandboxRequest{}, func(u *uapi.PostUpdatePodSandboxRequest) error {
		return e.Adaptation.PostUpdatePodSandbox(ctx, u)
	})
}

// StopPodSandbox converts req to upstream's type and passes it to upstream's StopPodSandbox.
func (e Events) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) error {
	return notify(req, &uapi.StopPodSandboxRequest{}, func(u *uapi.StopPodSandboxRequest) error { return e.Adaptation.StopPodSandbox(ctx, u) })
}

// RemovePodSandbox converts req to upstream's type and passes it to upstream's RemovePodSandbox.
func (e Events) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) error {
	return notify(req, &uapi.RemovePodSandboxRequest{}, func(u *uapi.RemovePodSandboxRequest) error {
		return e.Adaptation.RemovePodSandbox(ctx, u)
	})
}

// CreateContainer converts req to upstream's type and passes it to upstream's CreateContainer.
func (e Events) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return call(req, &uapi.CreateContainerRequest{}, &api.CreateContainerResponse{}, func(u *uapi.CreateContainerRequest) (proto.Message, error) {
		return e.Adaptation.CreateContainer(ctx, u)
	})
}

// PostCreateContainer converts req to upstream's type and passes it to upstream's PostCreateContainer.
func (e Events) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) error {
	return notify(req, &uapi.PostCreateContainerRequest{}, func(u *uapi.PostCreateContainerRequest) error {
		return e.Adaptation.PostCreateContainer(ctx, u)
	})
}

// StartContainer converts req to upstream's type and passes it to upstream's StartContainer.
func (e Events) StartContainer(ctx context.Context, req *api.StartContainerRequest) error {
	return notify(req, &uapi.StartContainerRequest{}, func(u *uapi.StartContainerRequest) error { return e.Adaptation.StartContainer(ctx, u) })
}

// PostStartContainer converts req to upstream's type and passes it to upstream's PostStartContainer.
func (e Events) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) error {
	return notify(req, &uapi.PostStartContainerRequest{}, func(u *uapi.PostStartContainerRequest) error {
		return e.Adaptation.PostStartContainer(ctx, u)
	})
}

// UpdateContainer converts req to upstream's type and passes it to upstream's UpdateContainer.
func (e Events) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return call(req, &uapi.UpdateContainerRequest{}, &api.UpdateContainerResponse{}, func(u *uapi.UpdateContainerRequest) (proto.Message, error) {
		return e.Adaptation.UpdateContainer(ctx, u)
	})
}

// PostUpdateContainer converts req to upstream's type and passes it to upstream's PostUpdateContainer.
func (e Events) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) error {
	return notify(req, &uapi.PostUpdateContainerRequest{}, func(u *uapi.PostUpdateContainerRequest) error {
		return e.Adaptation.PostUpdateContainer(ctx, u)
	})
}

// StopContainer converts req to upstream's type and passes it to upstream's StopContainer.
func (e Events) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return call(req, &uapi.StopContainerRequest{}, &api.StopContainerResponse{}, func(u *uapi.StopContainerRequest) (proto.Message, error) {
		return e.Adaptation.StopContainer(ctx, u)
	})
}

// RemoveContainer converts req to upstream's type and passes it to upstream's RemoveContainer.
func (e Events) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) error {
	return notify(req, &uapi.RemoveContainerRequest{}, func(u *uapi.RemoveContainerRequest) error {
		return e.Adaptation.RemoveContainer(ctx, u)
	})
}
