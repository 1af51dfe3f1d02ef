package adaptation

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
)

// countingRecorder is a MetricsRecorder implementing RequestRecorder,
// DeniedRecorder and AuditedRecorder that counts as package runtimemetrics does (which this
// package's tests cannot import): values keyed "metric/plugin/request"
// (or "metric/plugin/field/action"), a series made when first counted, or for
// the skipped events when the plugin registers; the plugin gauge under
// MetricPlugins+"//"; a forgotten plugin's keys deleted.
type countingRecorder struct {
	mu sync.Mutex
	v  map[string]float64
}

var (
	_ RequestRecorder = (*countingRecorder)(nil)
	_ DeniedRecorder  = (*countingRecorder)(nil)
	_ AuditedRecorder = (*countingRecorder)(nil)
)

func newCountingRecorder() *countingRecorder { return &countingRecorder{v: map[string]float64{}} }

func (r *countingRecorder) add(metric, plugin, what string, n float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.v[metric+"/"+plugin+"/"+what] += n
}

func (r *countingRecorder) RecordCall(context.Context, Call) {}

func (r *countingRecorder) RecordPluginCount(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.v[MetricPlugins+"//"] = float64(n)
}

func (r *countingRecorder) RecordRequest(plugin, request string, _ time.Duration, kind FailureKind) {
	r.add(MetricRequests, plugin, request, 1)
	r.add(MetricRequestSeconds, plugin, request, 1)
	if kind != 0 {
		r.add(MetricErrors, plugin, request, 1)
	}
	if kind == FailureTimeout {
		r.add(MetricTimeouts, plugin, request, 1)
	}
}

func (r *countingRecorder) RecordFailure(plugin, request string) {
	r.add(MetricErrors, plugin, request, 1)
}

func (r *countingRecorder) RecordDenied(_ context.Context, plugin, field string) {
	r.add(MetricDenied, plugin, field+"/"+ActionDenied, 1)
}

func (r *countingRecorder) RecordAudited(_ context.Context, plugin, field string) {
	r.add(MetricDenied, plugin, field+"/"+ActionAudited, 1)
}

func (r *countingRecorder) PluginSkips(plugin string, events api.EventMask) SkipCounter {
	for _, e := range events.Events() {
		r.add(MetricFiltered, plugin, e.Name(), 0)
		r.add(MetricOptedOut, plugin, e.Name(), 0)
	}
	return countingSkips{r, plugin}
}

func (r *countingRecorder) ForgetPlugin(plugin string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.v {
		if strings.Split(k, "/")[1] == plugin {
			delete(r.v, k)
		}
	}
}

// values returns a copy of the counts.
func (r *countingRecorder) values() map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := make(map[string]float64, len(r.v))
	for k, v := range r.v {
		c[k] = v
	}
	return c
}

// series returns the number of series of plugin.
func (r *countingRecorder) series(plugin string) int {
	n := 0
	for k := range r.values() {
		if strings.Split(k, "/")[1] == plugin {
			n++
		}
	}
	return n
}

// denied returns the count of changes plugin made that its grant refused
// in field (any field if field is "").
func (r *countingRecorder) denied(plugin, field string) float64 {
	return r.deniedAs(plugin, field, ActionDenied)
}

// deniedAs returns the denied count of plugin, field (any field if field
// is "") and action.
func (r *countingRecorder) deniedAs(plugin, field, action string) float64 {
	n := 0.0
	for k, v := range r.values() {
		parts := strings.Split(k, "/")
		if parts[0] == MetricDenied && parts[1] == plugin && (field == "" || parts[2] == field) && parts[3] == action {
			n += v
		}
	}
	return n
}

type countingSkips struct {
	r      *countingRecorder
	plugin string
}

func (c countingSkips) Skipped(e api.Event, optedOut bool) {
	if optedOut {
		c.r.add(MetricOptedOut, c.plugin, e.Name(), 1)
	} else {
		c.r.add(MetricFiltered, c.plugin, e.Name(), 1)
	}
}
