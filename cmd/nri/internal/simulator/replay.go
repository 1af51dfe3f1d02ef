package simulator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/merge"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"google.golang.org/protobuf/proto"
)

// Replaying a recording (package record): the simulator's runtime, with
// its plugins (WithExtraPlugin, WithExtraPluginDir, WithPolicy), is sent
// the recorded events in their order, the recorded pods and containers
// in place of a scenario's. The runtime's ListFunc lists what the
// recording says exists: its snapshot, then what the replayed events
// create.

// MaxReplayObjects bounds the pods and containers a replay keeps.
const MaxReplayObjects = 1 << 18

// Created is the outcome of one container's replayed creation.
type Created struct {
	// Pod and Proposed are the pod and the container as the runtime
	// proposed it (from the recording).
	Pod      *api.PodSandbox
	Proposed *api.Container
	// Container is the proposal with the replayed plugins' combined
	// adjustment (nil if the creation failed).
	Container *api.Container
	// Err is why the replayed creation failed.
	Err error
	// Plugins are the plugins that changed the container (their answer
	// had an adjustment) or failed its creation, in call order.
	Plugins []string
}

// replayState is what a replay knows exists.
type replayState struct {
	mu   sync.Mutex
	pods map[string]*api.PodSandbox
	ctrs map[string]*api.Container
	// order keeps the listing stable.
	podOrder, ctrOrder []string
}

func (st *replayState) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	pods := make([]*api.PodSandbox, 0, len(st.pods))
	for _, id := range st.podOrder {
		if p, ok := st.pods[id]; ok {
			pods = append(pods, api.Clone(p))
		}
	}
	ctrs := make([]*api.Container, 0, len(st.ctrs))
	for _, id := range st.ctrOrder {
		if c, ok := st.ctrs[id]; ok {
			ctrs = append(ctrs, api.Clone(c))
		}
	}
	return pods, ctrs, nil
}

// update accepts the updates plugins ask for on their own: a replay
// does not follow them (the recording has what the node did).
func (st *replayState) update(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (st *replayState) putPod(p *api.PodSandbox) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.pods[p.GetId()]; !ok {
		if len(st.pods)+len(st.ctrs) >= MaxReplayObjects {
			return fmt.Errorf("the recording holds more than %d pods and containers at once", MaxReplayObjects)
		}
		st.podOrder = append(st.podOrder, p.GetId())
	}
	st.pods[p.GetId()] = p
	return nil
}

func (st *replayState) putCtr(c *api.Container) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.ctrs[c.GetId()]; !ok {
		if len(st.pods)+len(st.ctrs) >= MaxReplayObjects {
			return fmt.Errorf("the recording holds more than %d pods and containers at once", MaxReplayObjects)
		}
		st.ctrOrder = append(st.ctrOrder, c.GetId())
	}
	st.ctrs[c.GetId()] = c
	return nil
}

func (st *replayState) drop(podID, ctrID string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.pods, podID)
	delete(st.ctrs, ctrID)
	// The order lists keep the IDs; they are skipped when listed, and
	// compacted when they grow twice as long as what exists.
	if len(st.podOrder) > 2*len(st.pods)+64 {
		st.podOrder = slices.DeleteFunc(st.podOrder, func(id string) bool { _, ok := st.pods[id]; return !ok })
	}
	if len(st.ctrOrder) > 2*len(st.ctrs)+64 {
		st.ctrOrder = slices.DeleteFunc(st.ctrOrder, func(id string) bool { _, ok := st.ctrs[id]; return !ok })
	}
}

// Replayer plays a recording through a simulated runtime.
type Replayer struct {
	*Simulator
	rec   *record.Recording
	state *replayState

	// calls collects, per container ID, the plugins that changed or
	// failed its creation (from the observer).
	callsMu sync.Mutex
	calls   map[string][]string
}

// NewReplay returns a simulator that replays rec with the plugins opts
// give; Start it, then Replay.
func NewReplay(rec *record.Recording, opts ...Option) (*Replayer, error) {
	if rec == nil {
		return nil, errors.New("nil recording")
	}
	sim, err := New(&scenario.Scenario{Name: "replay"}, opts...)
	if err != nil {
		return nil, err
	}
	st := &replayState{pods: map[string]*api.PodSandbox{}, ctrs: map[string]*api.Container{}}
	r := &Replayer{Simulator: sim, rec: rec, state: st, calls: map[string][]string{}}
	sim.list, sim.update = st.list, st.update
	sim.onCall = r.observe
	// The snapshot the recording starts with is what exists when the
	// plugins register.
	for _, e := range rec.Entries {
		if k := e.GetKind(); k != recordpb.Kind_SYNCHRONIZE && k != recordpb.Kind_STATE {
			break
		}
		snap := e.Message.(*api.SynchronizeRequest)
		for _, p := range snap.GetPods() {
			if err := st.putPod(p); err != nil {
				return nil, err
			}
		}
		for _, c := range snap.GetContainers() {
			if err := st.putCtr(c); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// Existing returns the number of containers the recording's snapshot
// holds.
func (r *Replayer) Existing() int {
	r.state.mu.Lock()
	defer r.state.mu.Unlock()
	return len(r.state.ctrs)
}

// observe notes the plugins that changed or failed a creation.
func (r *Replayer) observe(_ context.Context, c adaptation.Call) {
	req, ok := c.Request.(*api.CreateContainerRequest)
	if !ok || c.Event != api.Event_CREATE_CONTAINER {
		return
	}
	rsp, _ := c.Response.(*api.CreateContainerResponse)
	if c.Err == nil && proto.Size(rsp.GetAdjust()) == 0 {
		return
	}
	r.callsMu.Lock()
	defer r.callsMu.Unlock()
	id := req.GetContainer().GetId()
	if !slices.Contains(r.calls[id], c.Plugin) {
		r.calls[id] = append(r.calls[id], c.Plugin)
	}
}

// Replay sends the recorded events to the runtime in their order, with
// the recorded gaps between them if recordedTiming is set, and returns
// the outcome of every container creation, by container ID, with the
// number of events replayed.
func (r *Replayer) Replay(ctx context.Context, recordedTiming bool) (map[string]*Created, int, error) {
	a := r.adaptation()
	if a == nil {
		return nil, 0, errors.New("not started")
	}
	r.checkLaunched(a)
	idx := IndexRecording(r.rec)
	out := map[string]*Created{}
	var last int64
	events := 0
	for _, e := range r.rec.Entries {
		if e.GetKind() != recordpb.Kind_REQUEST {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, events, err
		}
		if recordedTiming && last != 0 {
			if gap := time.Duration(e.GetTimeUnixNano() - last); gap > 0 {
				t := time.NewTimer(gap)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return out, events, ctx.Err()
				}
			}
		}
		last = e.GetTimeUnixNano()
		events++
		if err := r.replay(ctx, a, e, idx, out); err != nil {
			return out, events, err
		}
	}
	return out, events, nil
}

// replay sends one recorded request.
func (r *Replayer) replay(ctx context.Context, a *adaptation.Adaptation, e *record.Entry, idx *RecordingIndex, out map[string]*Created) error {
	switch m := e.Message.(type) {
	case *api.RunPodSandboxRequest:
		if err := r.state.putPod(m.GetPod()); err != nil {
			return err
		}
		_ = a.RunPodSandbox(ctx, m)
	case *api.CreateContainerRequest:
		c := r.create(ctx, a, m, idx)
		out[m.GetContainer().GetId()] = c
	case *api.PostCreateContainerRequest:
		if c := out[m.GetContainer().GetId()]; c != nil && c.Err == nil {
			m = &api.PostCreateContainerRequest{Pod: m.GetPod(), Container: c.Container}
		}
		_ = a.PostCreateContainer(ctx, m)
	case *api.StartContainerRequest:
		_ = a.StartContainer(ctx, m)
	case *api.PostStartContainerRequest:
		_ = a.PostStartContainer(ctx, m)
	case *api.UpdateContainerRequest:
		_, _ = a.UpdateContainer(ctx, m)
	case *api.PostUpdateContainerRequest:
		_ = a.PostUpdateContainer(ctx, m)
	case *api.StopContainerRequest:
		_, _ = a.StopContainer(ctx, m)
	case *api.RemoveContainerRequest:
		r.state.drop("", m.GetContainer().GetId())
		_ = a.RemoveContainer(ctx, m)
	case *api.UpdatePodSandboxRequest:
		_, _ = a.UpdatePodSandbox(ctx, m)
	case *api.PostUpdatePodSandboxRequest:
		_ = a.PostUpdatePodSandbox(ctx, m)
	case *api.StopPodSandboxRequest:
		_ = a.StopPodSandbox(ctx, m)
	case *api.RemovePodSandboxRequest:
		r.state.drop(m.GetPod().GetId(), "")
		_ = a.RemovePodSandbox(ctx, m)
	}
	// ValidateContainerAdjustment is part of the replayed CreateContainer.
	return nil
}

// create replays a container's creation from the container as the
// runtime proposed it.
func (r *Replayer) create(ctx context.Context, a *adaptation.Adaptation, m *api.CreateContainerRequest, idx *RecordingIndex) *Created {
	id := m.GetContainer().GetId()
	proposed := m.GetContainer()
	if v := idx.Validation[id]; v != nil {
		proposed = v.GetContainer()
	}
	c := &Created{Pod: m.GetPod(), Proposed: proposed}
	if err := r.state.putCtr(proposed); err != nil {
		c.Err = err
		return c
	}
	rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: m.GetPod(), Container: api.Clone(proposed)})
	r.callsMu.Lock()
	c.Plugins = r.calls[id]
	delete(r.calls, id)
	r.callsMu.Unlock()
	if err != nil {
		c.Err = err
		r.state.drop("", id)
		return c
	}
	c.Container, c.Err = Adjusted(m.GetPod(), proposed, rsp.GetAdjust())
	return c
}

// Adjusted returns the container with the adjustment applied, as the
// next plugin of a runtime would see it.
func Adjusted(pod *api.PodSandbox, ctr *api.Container, adj *api.ContainerAdjustment) (*api.Container, error) {
	m := merge.NewCreate(pod, ctr)
	if err := m.Apply("replay", &api.CreateContainerResponse{Adjust: adj}); err != nil {
		return nil, fmt.Errorf("applying the adjustment: %w", err)
	}
	return api.Clone(m.Container()), nil
}

// RecordingIndex is what a recording says about each container's
// creation on the node, by container ID.
type RecordingIndex struct {
	// Validation is the ValidateContainerAdjustment request: the
	// container as proposed, the combined adjustment, the owners.
	Validation map[string]*api.ValidateContainerAdjustmentRequest
	// Created is the container PostCreateContainer reported.
	Created map[string]*api.Container
	// Answers are the recorded plugins' answers to CreateContainer (a
	// runtime's recording), in call order.
	Answers map[string][]*record.Entry
	// Creations are the CreateContainer requests, in order.
	Creations []*api.CreateContainerRequest
}

// IndexRecording indexes the creations of a recording.
func IndexRecording(rec *record.Recording) *RecordingIndex {
	idx := &RecordingIndex{
		Validation: map[string]*api.ValidateContainerAdjustmentRequest{},
		Created:    map[string]*api.Container{},
		Answers:    map[string][]*record.Entry{},
	}
	var current string // the container of the last CreateContainer
	for _, e := range rec.Entries {
		switch m := e.Message.(type) {
		case *api.CreateContainerRequest:
			if e.GetKind() == recordpb.Kind_REQUEST {
				idx.Creations = append(idx.Creations, m)
				current = m.GetContainer().GetId()
			}
		case *api.ValidateContainerAdjustmentRequest:
			idx.Validation[m.GetContainer().GetId()] = m
		case *api.PostCreateContainerRequest:
			idx.Created[m.GetContainer().GetId()] = m.GetContainer()
		case *api.CreateContainerResponse:
			if current != "" {
				idx.Answers[current] = append(idx.Answers[current], e)
			}
		}
	}
	return idx
}

// PluginReport returns the runtime's plugins and the registrations that
// failed.
func (r *Replayer) PluginReport() ([]report.Plugin, []report.RegistrationError) {
	a := r.adaptation()
	if a == nil {
		return nil, r.registrationErrors()
	}
	var out []report.Plugin
	for _, p := range a.Plugins() {
		var names []string
		for _, e := range p.Events.Events() {
			names = append(names, e.Name())
		}
		out = append(out, report.Plugin{Name: p.Name, Index: p.Index, ID: p.FullName(), Kind: p.Kind.String(), PID: p.PID, Events: names})
	}
	return out, r.registrationErrors()
}
