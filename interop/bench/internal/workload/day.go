package workload

import (
	"time"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// Kind is the kind of a lifecycle event of the node's day.
type Kind int

// The event kinds of the node's day, in the order of a pod's life.
const (
	RunPodSandbox Kind = iota
	CreateContainer
	StartContainer
	UpdateContainer
	StopContainer
	RemoveContainer
	StopPodSandbox
	RemovePodSandbox
	numKinds
)

// Kinds are all event kinds, in the order of a pod's life.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

var kindNames = [numKinds]string{"RunPodSandbox", "CreateContainer", "StartContainer", "UpdateContainer",
	"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}

// String returns the event's NRI name.
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "Kind(?)"
	}
	return kindNames[k]
}

// Event is one event of the node's day: what the runtime sends, and when.
type Event struct {
	Kind Kind
	// At is when the event is due, from the start of the day.
	At time.Duration
	// Pod is the event's pod, Ctr its container (nil for pod events).
	Pod *api.PodSandbox
	Ctr *api.Container
	// Resources are UpdateContainer's new resources.
	Resources *api.LinuxResources
}

// ContainersPerPod is how many containers each pod of the day runs.
const ContainersPerPod = 3

// DayNode returns the node the day starts with: pods pods of
// ContainersPerPod running containers each, as the runtime lists them for
// Synchronize.
func DayNode(pods int) ([]*api.PodSandbox, []*api.Container) {
	ps := make([]*api.PodSandbox, pods)
	var cs []*api.Container
	for i := range ps {
		ps[i] = Pod(i)
		for k := range ContainersPerPod {
			c := Container(ContainersPerPod*i+k, ps[i])
			c.State = api.ContainerState_CONTAINER_RUNNING
			cs = append(cs, c)
		}
	}
	return ps, cs
}

// Day returns the first n events of a steady churn on the node of
// DayNode(pods), one every period: the oldest pod is torn down (its
// containers stopped, then removed, then the pod stopped and removed: 8
// events) and a new pod brought up (the pod run, its containers created,
// then started, then the first one updated: 8 events), and so on, so that
// the node holds pods or pods-1 pods at every moment. Every event carries
// its own copy of the pod and container, in the state of that moment.
func Day(pods, n int, period time.Duration) []Event {
	evs := make([]Event, 0, n)
	add := func(k Kind, pod *api.PodSandbox, ctr *api.Container, state api.ContainerState) bool {
		if len(evs) == n {
			return false
		}
		e := Event{Kind: k, At: time.Duration(len(evs)) * period, Pod: proto.Clone(pod).(*api.PodSandbox)}
		if ctr != nil {
			e.Ctr = proto.Clone(ctr).(*api.Container)
			e.Ctr.State = state
		}
		if k == UpdateContainer {
			e.Resources = resources()
			e.Resources.Memory.Limit.Value = 768 << 20
			e.Resources.Cpu.Shares.Value = 1024
		}
		evs = append(evs, e)
		return true
	}
	ctrs := func(i int, pod *api.PodSandbox) []*api.Container {
		cs := make([]*api.Container, ContainersPerPod)
		for k := range cs {
			cs[k] = Container(ContainersPerPod*i+k, pod)
		}
		return cs
	}
	const (
		created = api.ContainerState_CONTAINER_CREATED
		running = api.ContainerState_CONTAINER_RUNNING
		stopped = api.ContainerState_CONTAINER_STOPPED
	)
	for c := 0; len(evs) < n; c++ {
		old, nu := Pod(c), Pod(pods+c)
		oc, nc := ctrs(c, old), ctrs(pods+c, nu)
		for _, ctr := range oc {
			add(StopContainer, old, ctr, running)
		}
		for _, ctr := range oc {
			add(RemoveContainer, old, ctr, stopped)
		}
		add(StopPodSandbox, old, nil, 0)
		add(RemovePodSandbox, old, nil, 0)
		add(RunPodSandbox, nu, nil, 0)
		for _, ctr := range nc {
			add(CreateContainer, nu, ctr, created)
		}
		for _, ctr := range nc {
			add(StartContainer, nu, ctr, created)
		}
		add(UpdateContainer, nu, nc[0], running)
	}
	return evs
}
