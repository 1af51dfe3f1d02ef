package adaptation

// The scope and opt-out behaviour of the stub-mode test plugin (see
// helper_plugin_test.go and the -scope, -opt-out-*, -sync-opt-out,
// -create-update and -unsolicited flags).

import (
	"context"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// SynchronizeWithOptOut answers Synchronize, opting out of the
// -sync-opt-out IDs.
func (r *recorder) SynchronizeWithOptOut(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
	updates, err := r.synchronize(ctx, pods, ctrs)
	if err != nil || r.syncOptOut == "" {
		return updates, nil, err
	}
	out := &api.OptOut{}
	for _, id := range strings.Split(r.syncOptOut, ",") {
		if strings.HasPrefix(id, "pod") {
			out.PodIds = append(out.PodIds, id)
		} else {
			out.ContainerIds = append(out.ContainerIds, id)
		}
	}
	return updates, out, nil
}

// sendUnsolicited sends the -unsolicited updates and evictions and
// reports the outcome: "UNSOLICITED failed=ID,... err=message".
func (r *recorder) sendUnsolicited(ctx context.Context) {
	var (
		updates []*api.ContainerUpdate
		evicts  []*api.ContainerEviction
	)
	for _, item := range strings.Split(r.unsolicited, ",") {
		switch op, id, _ := strings.Cut(item, ":"); op {
		case "update":
			updates = append(updates, &api.ContainerUpdate{ContainerId: id})
		case "evict":
			evicts = append(evicts, &api.ContainerEviction{ContainerId: id, Reason: "test"})
		}
	}
	failed, err := r.st.UpdateContainers(ctx, updates, evicts)
	var ids []string
	for _, f := range failed {
		ids = append(ids, f.GetContainerId())
	}
	msg := "none"
	if err != nil {
		msg = err.Error()
	}
	say("UNSOLICITED failed=%s err=%s", strings.Join(ids, ","), msg)
}
