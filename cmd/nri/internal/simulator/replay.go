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

// Answer is one plugin's answer to an event, replayed or recorded.
type Answer struct {
	// Plugin is the plugin's full name, IDX-NAME.
	Plugin string
	// Response is its answer (nil if it failed).
	Response proto.Message
	// Err is how it failed ("" if it answered).
	Err string
	// Refused are the fields of the answer the runtime's policy refused
	// (recorded answers only).
	Refused []string
}

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
	// Answers are every replayed plugin's answer, in call order.
	Answers []Answer
}

// Changed is the outcome of one replayed UpdateContainer or
// StopContainer: the resources its plugins set.
type Changed struct {
	// Event is UpdateContainer or StopContainer, Seq the sequence number
	// of its request in the recording.
	Event api.Event
	Seq   uint64
	// Pod and Container are what the event is about, Resources the
	// resources UpdateContainer asked for (as recorded).
	Pod       *api.PodSandbox
	Container *api.Container
	Resources *api.LinuxResources
	// Result is what the event's plugins set, by container ID: an
	// UpdateContainer's merged resources of its container, and the
	// updates of other containers the plugins asked for (StopContainer:
	// those only).
	Result map[string]*api.LinuxResources
	// Err is why the event failed.
	Err error
	// Plugins are the plugins whose answer asked for a change.
	Plugins []string
}

// Outcome is what a replay produced.
type Outcome struct {
	// Events counts the recorded events replayed.
	Events int
	// Created is every replayed creation, by container ID.
	Created map[string]*Created
	// Changed are the replayed UpdateContainer and StopContainer events,
	// in order.
	Changed []*Changed
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
	return put(st, st.pods, &st.podOrder, p.GetId(), p)
}

func (st *replayState) putCtr(c *api.Container) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return put(st, st.ctrs, &st.ctrOrder, c.GetId(), c)
}

// put adds or replaces the object of id in m (st's pods or containers,
// listed in the order of order), within MaxReplayObjects. The caller
// holds st.mu.
func put[T any](st *replayState, m map[string]T, order *[]string, id string, obj T) error {
	if _, ok := m[id]; !ok {
		if len(st.pods)+len(st.ctrs) >= MaxReplayObjects {
			return fmt.Errorf("the recording holds more than %d pods and containers at once", MaxReplayObjects)
		}
		*order = append(*order, id)
	}
	m[id] = obj
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
	// existing counts the containers of the recording's snapshot.
	existing int

	// answers collects the replayed plugins' answers to the event being
	// replayed (from the observer): the replay sends one event at a time.
	answersMu sync.Mutex
	current   eventKey
	answers   []Answer
}

// NewReplay returns a simulator that replays rec with the plugins opts
// give; Start it, then Replay.
func NewReplay(rec *record.Recording, opts ...Option) (*Replayer, error) {
	if rec == nil {
		return nil, errors.New("nil recording")
	}
	r := &Replayer{rec: rec}
	sim, err := New(&scenario.Scenario{Name: "replay"}, append(opts, withAdaptationOptions(adaptation.WithMetricsRecorder(collector{r})))...)
	if err != nil {
		return nil, err
	}
	st := &replayState{pods: map[string]*api.PodSandbox{}, ctrs: map[string]*api.Container{}}
	r.Simulator, r.state = sim, st
	sim.list, sim.update = st.list, st.update
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
	r.existing = len(st.ctrs)
	return r, nil
}

// Existing returns the number of containers the recording's snapshot
// holds.
func (r *Replayer) Existing() int { return r.existing }

// collector tells its replayer of every plugin call (an
// adaptation.MetricsRecorder, which, unlike an Observer, a simulator can
// have several of).
type collector struct{ r *Replayer }

func (c collector) RecordCall(ctx context.Context, call adaptation.Call) { c.r.observe(ctx, call) }
func (c collector) RecordPluginCount(int)                                {}

// observe collects the replayed plugins' answers to the event being
// replayed.
func (r *Replayer) observe(_ context.Context, c adaptation.Call) {
	var ctrID string
	if m, ok := c.Request.(interface{ GetContainer() *api.Container }); ok {
		ctrID = m.GetContainer().GetId()
	}
	r.answersMu.Lock()
	defer r.answersMu.Unlock()
	if (eventKey{c.Event, ctrID}) != r.current {
		return // another event's (a plugin catching up)
	}
	a := Answer{Plugin: c.Plugin, Response: c.Response}
	if c.Err != nil {
		a.Err = c.Err.Error()
	}
	r.answers = append(r.answers, a)
}

// collect starts collecting the answers to event e about container
// ctrID, and returns those collected for the previous event.
func (r *Replayer) collect(e api.Event, ctrID string) []Answer {
	r.answersMu.Lock()
	defer r.answersMu.Unlock()
	out := r.answers
	r.current, r.answers = eventKey{e, ctrID}, nil
	return out
}

// Replay sends the recorded events to the runtime in their order, with
// the recorded gaps between them if recordedTiming is set, and returns
// what they produced: every container creation's outcome, every
// UpdateContainer's and StopContainer's.
func (r *Replayer) Replay(ctx context.Context, recordedTiming bool) (*Outcome, error) {
	a := r.adaptation()
	if a == nil {
		return nil, errors.New("not started")
	}
	r.checkLaunched(a)
	idx := IndexRecording(r.rec)
	out := &Outcome{Created: map[string]*Created{}}
	var last int64
	for _, e := range r.rec.Entries {
		if e.GetKind() != recordpb.Kind_REQUEST {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if recordedTiming && last != 0 {
			if gap := time.Duration(e.GetTimeUnixNano() - last); gap > 0 {
				t := time.NewTimer(gap)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return out, ctx.Err()
				}
			}
		}
		last = e.GetTimeUnixNano()
		out.Events++
		if err := r.replay(ctx, a, e, idx, out); err != nil {
			return out, err
		}
	}
	r.collect(api.Event_UNKNOWN, "")
	return out, nil
}

// replay sends one recorded request.
func (r *Replayer) replay(ctx context.Context, a *adaptation.Adaptation, e *record.Entry, idx *RecordingIndex, out *Outcome) error {
	switch m := e.Message.(type) {
	case *api.RunPodSandboxRequest:
		if err := r.state.putPod(m.GetPod()); err != nil {
			return err
		}
		_ = a.RunPodSandbox(ctx, m)
	case *api.CreateContainerRequest:
		out.Created[m.GetContainer().GetId()] = r.create(ctx, a, m, idx)
	case *api.ValidateContainerAdjustmentRequest:
		// The creation, where the recorder took validation for it
		// (record.Subscription); otherwise part of the replayed
		// CreateContainer.
		if id := m.GetContainer().GetId(); out.Created[id] == nil {
			out.Created[id] = r.create(ctx, a, &api.CreateContainerRequest{Pod: m.GetPod(), Container: m.GetContainer()}, idx)
		}
	case *api.PostCreateContainerRequest:
		if c := out.Created[m.GetContainer().GetId()]; c != nil && c.Err == nil {
			m = &api.PostCreateContainerRequest{Pod: m.GetPod(), Container: c.Container}
		}
		_ = a.PostCreateContainer(ctx, m)
	case *api.StartContainerRequest:
		_ = a.StartContainer(ctx, m)
	case *api.UpdateContainerRequest:
		c := &Changed{Event: e.GetEvent(), Seq: e.GetSeq(), Pod: m.GetPod(), Container: m.GetContainer(), Resources: m.GetLinuxResources()}
		r.collect(e.GetEvent(), m.GetContainer().GetId())
		rsp, err := a.UpdateContainer(ctx, m)
		c.finish(rsp.GetUpdate(), err, r.collect(api.Event_UNKNOWN, ""))
		out.Changed = append(out.Changed, c)
	case *api.StopContainerRequest:
		c := &Changed{Event: e.GetEvent(), Seq: e.GetSeq(), Pod: m.GetPod(), Container: m.GetContainer()}
		r.collect(e.GetEvent(), m.GetContainer().GetId())
		rsp, err := a.StopContainer(ctx, m)
		c.finish(rsp.GetUpdate(), err, r.collect(api.Event_UNKNOWN, ""))
		out.Changed = append(out.Changed, c)
	case *api.RemoveContainerRequest:
		r.state.drop("", m.GetContainer().GetId())
		_ = a.RemoveContainer(ctx, m)
	case *api.UpdatePodSandboxRequest:
		_, _ = a.UpdatePodSandbox(ctx, m)
	case *api.RemovePodSandboxRequest:
		r.state.drop(m.GetPod().GetId(), "")
		_ = a.RemovePodSandbox(ctx, m)
	default:
		// A notification the replay learns nothing from: sent as
		// recorded (generated from the event table, events_generated.go).
		replayNotification(ctx, a, e.Message)
	}
	return nil
}

// finish notes the event's result: the updates the runtime merged (by
// container: the event's own container's last, as UpdateContainer
// returns it), its error, and the plugins that asked for changes.
func (c *Changed) finish(updates []*api.ContainerUpdate, err error, answers []Answer) {
	c.Err = err
	c.Result = map[string]*api.LinuxResources{}
	for _, u := range updates {
		c.Result[u.GetContainerId()] = u.GetLinux().GetResources()
	}
	for _, a := range answers {
		if u, ok := a.Response.(interface{ GetUpdate() []*api.ContainerUpdate }); a.Err != "" || ok && len(u.GetUpdate()) > 0 {
			c.Plugins = append(c.Plugins, a.Plugin)
		}
	}
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
	r.collect(api.Event_CREATE_CONTAINER, id)
	rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: m.GetPod(), Container: api.Clone(proposed)})
	c.Answers = r.collect(api.Event_UNKNOWN, "")
	for _, an := range c.Answers {
		if a, ok := an.Response.(*api.CreateContainerResponse); an.Err != "" || ok && proto.Size(a.GetAdjust()) > 0 {
			c.Plugins = append(c.Plugins, an.Plugin)
		}
	}
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
