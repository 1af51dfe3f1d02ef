package adaptation

import (
	"context"
	"time"

	nrikit "github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
)

// Metrics is a runtime's recorder of plugin metrics.
type Metrics interface {
	// RecordPluginInvocation records one request to a plugin (IDX-NAME)
	// for operation (an event name) and how it failed, if it did.
	RecordPluginInvocation(pluginName, operation string, err error)
	// RecordPluginLatency records how long the request took.
	RecordPluginLatency(pluginName, operation string, latency time.Duration)
	// RecordPluginAdjustments records the changes a plugin answered a
	// request with.
	RecordPluginAdjustments(pluginName, operation string, adjust *ContainerAdjustment, updates, evicts int)
	// UpdatePluginCount records the number of plugins receiving events.
	UpdatePluginCount(count int)
}

// metricsRecorder reports nrikit's calls to a Metrics.
type metricsRecorder struct{ m Metrics }

func (r metricsRecorder) RecordCall(_ context.Context, c nrikit.Call) {
	op := c.Event.Name()
	r.m.RecordPluginLatency(c.Plugin, op, c.Duration)
	r.m.RecordPluginInvocation(c.Plugin, op, c.Err)
	var (
		adjust          *ContainerAdjustment
		updates, evicts int
	)
	switch rsp := c.Response.(type) {
	case *api.CreateContainerResponse:
		adjust, updates, evicts = rsp.GetAdjust(), len(rsp.GetUpdate()), len(rsp.GetEvict())
	case *api.UpdateContainerResponse:
		updates, evicts = len(rsp.GetUpdate()), len(rsp.GetEvict())
	case *api.StopContainerResponse:
		updates = len(rsp.GetUpdate())
	default:
		return
	}
	if adjust != nil || updates > 0 || evicts > 0 {
		r.m.RecordPluginAdjustments(c.Plugin, op, adjust, updates, evicts)
	}
}

func (r metricsRecorder) RecordPluginCount(n int) { r.m.UpdatePluginCount(n) }

// DeprecationRecorder is told when a plugin uses a deprecated feature.
type DeprecationRecorder = nrikit.DeprecationRecorder

// Deprecation is a deprecated feature a plugin uses.
type Deprecation = nrikit.Deprecation

// DeprecatedStateChange is a plugin that receives an event as a
// StateChange.
const DeprecatedStateChange = nrikit.DeprecatedStateChange
