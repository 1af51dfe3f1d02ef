// Package harness is the part of the interop tests' runtime harnesses that
// does not depend on whose runtime is under test: the directories, the
// state the runtime reports, the updates it receives, and the installing
// of test plugins with their record files.
package harness

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// State is a test runtime's surroundings. Embed it in the harness of a
// runtime.
type State struct {
	T       testing.TB
	Socket  string // the runtime's socket for external plugins
	Dir     string // pre-installed plugins
	Records string // the plugins' record files

	mu      sync.Mutex
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	Updates chan []*api.ContainerUpdate // updates the runtime was asked to apply
}

// NewState returns a State whose runtime reports the existing fixture pod
// and containers; its directories are removed at the end of the test.
func NewState(t testing.TB) *State {
	t.Helper()
	// Not t.TempDir: unix socket paths are limited to 108 bytes.
	sockDir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	return &State{
		T:       t,
		Socket:  filepath.Join(sockDir, "nri.sock"),
		Dir:     t.TempDir(),
		Records: t.TempDir(),
		pods:    []*api.PodSandbox{fixture.ExistingPod()},
		ctrs:    []*api.Container{fixture.ExistingContainer(fixture.OtherCtrID), fixture.ExistingContainer(fixture.ThirdCtrID)},
		Updates: make(chan []*api.ContainerUpdate, 16),
	}
}

// SetState replaces what the runtime reports; call it before Start.
func (s *State) SetState(pods []*api.PodSandbox, ctrs []*api.Container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.ctrs = pods, ctrs
}

// List returns what the runtime reports.
func (s *State) List() ([]*api.PodSandbox, []*api.Container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods, s.ctrs
}

// Push records updates the runtime was asked to apply; the caller hands
// over u.
func (s *State) Push(u []*api.ContainerUpdate) {
	select {
	case s.Updates <- u:
	default:
		s.T.Errorf("too many updates")
	}
}

// RecordFile returns the record file of the plugin fullName.
func (s *State) RecordFile(fullName string) string {
	return filepath.Join(s.Records, fullName+".jsonl")
}

// Install puts the test plugin bin into the plugin directory as fullName,
// recording to its record file.
func (s *State) Install(bin, fullName string, args ...string) {
	s.T.Helper()
	args = append([]string{"-record", s.RecordFile(fullName)}, args...)
	if err := testbin.Install(s.Dir, fullName, bin, args...); err != nil {
		s.T.Fatal(err)
	}
}
