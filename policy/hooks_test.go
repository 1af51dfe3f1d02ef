package policy

import (
	"github.com/nrikit/nrikit/api"
)

// hooks returns an adjustment of one createContainer hook.
func hooks(path string, args []string, env ...string) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Hooks: &api.Hooks{CreateContainer: []*api.Hook{{Path: path, Args: args, Env: env}}}}
}
