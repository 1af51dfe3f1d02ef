// Package runtimetest holds what the tests of a runtime embedding the
// adaptation package share: a fake runtime's pods and containers.
package runtimetest

import (
	"context"
	"slices"
	"sync"

	"github.com/nrikit/nrikit/api"
)

// Store is a fake runtime's pods and containers, with the ListFunc and
// UpdateFunc of adaptation.New. Following the ListFunc contract, a test
// adds an object before it calls the object's creation event and
// deletes it before its removal event. Its methods are safe for
// concurrent use.
type Store struct {
	mu   sync.Mutex
	pods map[string]*api.PodSandbox
	ctrs map[string]*api.Container
	// updates and evictions record the UpdateFunc calls.
	updates   [][]*api.ContainerUpdate
	evictions [][]*api.ContainerEviction
	failAll   bool
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{pods: map[string]*api.PodSandbox{}, ctrs: map[string]*api.Container{}}
}

// List is the runtime's ListFunc: every pod and container in the store.
func (s *Store) List(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods := make([]*api.PodSandbox, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	ctrs := make([]*api.Container, 0, len(s.ctrs))
	for _, c := range s.ctrs {
		ctrs = append(ctrs, c)
	}
	return pods, ctrs, nil
}

// Update is the runtime's UpdateFunc: it records the call and applies
// nothing; every update fails after FailUpdates.
func (s *Store) Update(_ context.Context, u []*api.ContainerUpdate, e []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, u)
	s.evictions = append(s.evictions, e)
	if s.failAll {
		return u, nil
	}
	return nil, nil
}

// FailUpdates makes Update report every update it is given as failed.
func (s *Store) FailUpdates() { s.mu.Lock(); s.failAll = true; s.mu.Unlock() }

// Updates returns the updates and evictions of each Update call so far.
func (s *Store) Updates() ([][]*api.ContainerUpdate, [][]*api.ContainerEviction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updates), slices.Clone(s.evictions)
}

// UpdateCalls returns the number of Update calls so far.
func (s *Store) UpdateCalls() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.updates) }

// AddPod adds (or replaces) a pod.
func (s *Store) AddPod(p *api.PodSandbox) { s.mu.Lock(); s.pods[p.Id] = p; s.mu.Unlock() }

// DelPod deletes a pod.
func (s *Store) DelPod(id string) { s.mu.Lock(); delete(s.pods, id); s.mu.Unlock() }

// AddCtr adds (or replaces) a container.
func (s *Store) AddCtr(c *api.Container) { s.mu.Lock(); s.ctrs[c.Id] = c; s.mu.Unlock() }

// DelCtr deletes a container.
func (s *Store) DelCtr(id string) { s.mu.Lock(); delete(s.ctrs, id); s.mu.Unlock() }

// Pod returns the pod id, or nil.
func (s *Store) Pod(id string) *api.PodSandbox { s.mu.Lock(); defer s.mu.Unlock(); return s.pods[id] }
