package simulator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/ocispec"
)

// pod is a simulated pod.
type pod struct {
	sc     *scenario.Pod
	pb     *api.PodSandbox
	listed bool // ListFunc returns it
}

// container is a simulated container and its OCI spec.
type container struct {
	sc       *scenario.Container
	pod      *pod
	proposed *rspec.Spec // before any plugin ran
	spec     *rspec.Spec // current
	state    api.ContainerState
	listed   bool   // ListFunc returns it
	status   string // for the report: "not created", "created", ..., "failed"
	err      string // why creation failed

	createdAt, startedAt, finishedAt int64
	pid                              uint32
}

// store holds the simulated runtime's pods and containers. Its lock is
// never held while the Adaptation is called, so the Adaptation's ListFunc
// and UpdateFunc calls (which take it) cannot deadlock with the player.
type store struct {
	mu      sync.Mutex
	pods    map[string]*pod       // by scenario name
	ctrs    map[string]*container // by ID
	order   []*container          // in scenario order
	kube    *kube                 // what Kubernetes makes of them
	nextPID uint32
	// onUpdate is told about updates that plugins asked for on their
	// own (not in answer to an event).
	onUpdate func(ctx context.Context, upd *api.ContainerUpdate, target string, err error)
	onEvict  func(ctx context.Context, ev *api.ContainerEviction, target string)
}

func newStore(sc *scenario.Scenario) *store {
	s := &store{pods: map[string]*pod{}, ctrs: map[string]*container{}, kube: newKube(sc), nextPID: 4200}
	for _, p := range sc.Pods {
		s.pods[p.Name] = &pod{sc: p}
	}
	for _, c := range sc.Containers {
		ctr := &container{sc: c, pod: s.pods[c.Pod], status: "not created"}
		s.ctrs[c.ID] = ctr
		s.order = append(s.order, ctr)
	}
	return s
}

func (s *store) pid() uint32 {
	s.nextPID += 17
	return s.nextPID
}

// podSandbox builds the protocol's description of a pod.
func (s *store) podSandbox(p *scenario.Pod, pid uint32, ip int) *api.PodSandbox {
	linux := s.kube.podLinux(p)
	linux.Namespaces = []*api.LinuxNamespace{
		{Type: "network", Path: fmt.Sprintf("/var/run/netns/cni-%s", p.UID)},
		{Type: "ipc", Path: fmt.Sprintf("/proc/%d/ns/ipc", pid)},
		{Type: "uts", Path: fmt.Sprintf("/proc/%d/ns/uts", pid)},
	}
	return &api.PodSandbox{
		Id:             p.ID,
		Name:           p.Name,
		Uid:            p.UID,
		Namespace:      p.Namespace,
		Labels:         maps.Clone(p.Labels),
		Annotations:    maps.Clone(p.Annotations),
		RuntimeHandler: p.RuntimeHandler,
		Pid:            pid,
		Ips:            []string{fmt.Sprintf("10.88.0.%d", ip)},
		Linux:          linux,
	}
}

// toAPI describes a container to plugins; the caller holds s.mu or owns c.
func (c *container) toAPI() *api.Container {
	return ocispec.ToContainer(c.spec, ocispec.ContainerMeta{
		ID:           c.sc.ID,
		PodSandboxID: c.pod.sc.ID,
		Name:         c.sc.Name,
		State:        c.state,
		Labels:       c.sc.Labels,
		Image:        &api.Image{Name: c.sc.Image},
		CreatedAt:    c.createdAt,
		StartedAt:    c.startedAt,
		FinishedAt:   c.finishedAt,
		Pid:          c.pid,
	})
}

// list is the runtime's ListFunc: the pods and containers whose creation
// event was called and whose removal event was not.
func (s *store) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pods []*api.PodSandbox
	for _, name := range slices.Sorted(maps.Keys(s.pods)) {
		if p := s.pods[name]; p.listed {
			pods = append(pods, api.Clone(p.pb))
		}
	}
	var ctrs []*api.Container
	for _, c := range s.order {
		if c.listed {
			ctrs = append(ctrs, c.toAPI())
		}
	}
	return pods, ctrs, nil
}

// update is the runtime's UpdateFunc, for updates and evictions plugins
// ask for on their own.
func (s *store) update(ctx context.Context, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	var failed []*api.ContainerUpdate
	for _, u := range updates {
		target, err := s.applyUpdate(u)
		if s.onUpdate != nil {
			s.onUpdate(ctx, u, target, err)
		}
		if err != nil && !u.GetIgnoreFailure() {
			failed = append(failed, u)
		}
	}
	for _, e := range evictions {
		s.mu.Lock()
		target := e.GetContainerId()
		if c, ok := s.ctrs[target]; ok {
			target = c.sc.Name
		}
		s.mu.Unlock()
		if s.onEvict != nil {
			s.onEvict(ctx, e, target)
		}
	}
	return failed, nil
}

// applyUpdate applies a container update to its container's spec; it
// returns the container's name.
func (s *store) applyUpdate(u *api.ContainerUpdate) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.ctrs[u.GetContainerId()]
	if !ok || !c.listed {
		return u.GetContainerId(), fmt.Errorf("no container %q", u.GetContainerId())
	}
	if err := ocispec.ApplyUpdate(c.spec, u); err != nil {
		return c.sc.Name, fmt.Errorf("updating container %q: %w", c.sc.Name, err)
	}
	return c.sc.Name, nil
}

// containerName returns the name of the container with id (or id).
func (s *store) containerName(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.ctrs[id]; ok {
		return c.sc.Name
	}
	return id
}

// now returns the current time in Unix nanoseconds.
func now() int64 { return time.Now().UnixNano() }
