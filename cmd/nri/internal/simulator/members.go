package simulator

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/adaptation"
)

// members remembers the plugins that took part in the run, so that the
// report lists a plugin the runtime lost during it (the runtime forgets
// it), and what the runtime said when it dropped it.
type members struct {
	// step is the step being played (1-based; 0 between runs of steps).
	step atomic.Int64

	mu   sync.Mutex
	seen map[string]adaptation.PluginInfo // by IDX-NAME, active when seen
	gone []departure
}

// departure is a plugin the runtime disconnected while steps were played.
type departure struct {
	plugin string
	reason string // the runtime's, such as "timed out handling CreateContainer"
	step   int
}

// see remembers the active plugins of infos.
func (m *members) see(infos []adaptation.PluginInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]adaptation.PluginInfo{}
	}
	for _, p := range infos {
		if p.State == adaptation.StateActive {
			m.seen[p.FullName()] = p
		}
	}
}

// disconnected records that the runtime disconnected plugin for reason,
// if steps are being played.
func (m *members) disconnected(plugin, reason string) {
	step := int(m.step.Load())
	if step == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gone = append(m.gone, departure{plugin: plugin, reason: reason, step: step})
}

// departures returns the plugins disconnected during the steps, with the
// information last seen of each (the zero PluginInfo if never seen
// active).
func (m *members) departures() ([]departure, map[string]adaptation.PluginInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	infos := make(map[string]adaptation.PluginInfo, len(m.gone))
	for _, d := range m.gone {
		infos[d.plugin] = m.seen[d.plugin]
	}
	return slices.Clone(m.gone), infos
}
