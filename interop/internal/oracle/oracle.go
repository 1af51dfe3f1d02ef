// Package oracle merges plugin answers the way upstream's runtime does,
// by running containerd/nri v0.12.5's adaptation in-process with builtin
// plugins that give those answers. Tests use it as the expected result of
// nrikit's runtime for the same answers.
package oracle

import (
	"context"
	"fmt"
	"path/filepath"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	uapi "github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
)

// Answers are one plugin's answers; nil ones are not subscribed.
type Answers struct {
	Create *api.CreateContainerResponse
	Update *api.UpdateContainerResponse
}

// runtime starts upstream's adaptation with one builtin plugin per answer
// (indexes 10, 20, ...), in a scratch directory dir.
func runtime(dir string, answers []Answers) (*uadapt.Adaptation, error) {
	var plugins []*builtin.BuiltinPlugin
	for i, a := range answers {
		var h builtin.BuiltinHandlers
		if a.Create != nil {
			rsp, err := protodiff.Convert(a.Create, &uapi.CreateContainerResponse{})
			if err != nil {
				return nil, err
			}
			h.CreateContainer = func(context.Context, *uapi.CreateContainerRequest) (*uapi.CreateContainerResponse, error) {
				return rsp, nil
			}
		}
		if a.Update != nil {
			rsp, err := protodiff.Convert(a.Update, &uapi.UpdateContainerResponse{})
			if err != nil {
				return nil, err
			}
			h.UpdateContainer = func(context.Context, *uapi.UpdateContainerRequest) (*uapi.UpdateContainerResponse, error) {
				return rsp, nil
			}
		}
		plugins = append(plugins, &builtin.BuiltinPlugin{Base: fmt.Sprintf("oracle%d", i+1), Index: fmt.Sprintf("%d0", i+1), Handlers: h})
	}
	sync := func(ctx context.Context, cb uadapt.SyncCB) error { _, err := cb(ctx, nil, nil); return err }
	update := func(context.Context, []*uapi.ContainerUpdate) ([]*uapi.ContainerUpdate, error) { return nil, nil }
	r, err := uadapt.New("oracle", "v0", sync, update,
		uadapt.WithPluginPath(filepath.Join(dir, "none")), uadapt.WithPluginConfigPath(filepath.Join(dir, "none")),
		uadapt.WithDisabledExternalConnections(), uadapt.WithBuiltinPlugins(plugins...))
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	if err := r.Start(); err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	return r, nil
}

// Create returns upstream's CreateContainer result for req when plugins
// answer in order with answers (dir is a scratch directory).
func Create(ctx context.Context, dir string, req *api.CreateContainerRequest, answers ...Answers) (*api.CreateContainerResponse, error) {
	r, err := runtime(dir, answers)
	if err != nil {
		return nil, err
	}
	defer r.Stop()
	ureq, err := protodiff.Convert(req, &uapi.CreateContainerRequest{})
	if err != nil {
		return nil, err
	}
	rsp, err := r.CreateContainer(ctx, ureq)
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	return protodiff.Convert(rsp, &api.CreateContainerResponse{})
}

// Update returns upstream's UpdateContainer result for req when plugins
// answer in order with answers.
func Update(ctx context.Context, dir string, req *api.UpdateContainerRequest, answers ...Answers) (*api.UpdateContainerResponse, error) {
	r, err := runtime(dir, answers)
	if err != nil {
		return nil, err
	}
	defer r.Stop()
	ureq, err := protodiff.Convert(req, &uapi.UpdateContainerRequest{})
	if err != nil {
		return nil, err
	}
	rsp, err := r.UpdateContainer(ctx, ureq)
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	return protodiff.Convert(rsp, &api.UpdateContainerResponse{})
}
