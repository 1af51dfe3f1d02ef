package runtimemetrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/prometheus/client_golang/prometheus"
)

// gather returns reg's series as "name{label=value,...}" → value (a
// histogram's sample count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			default:
				out[key] = -1
			}
		}
	}
	return out
}

// checkSeries checks that got has the series of want, with their values,
// and none of absent.
func checkSeries(t *testing.T, got, want map[string]float64, absent ...string) {
	t.Helper()
	for key, want := range want {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	for _, key := range absent {
		if _, ok := got[key]; ok {
			t.Errorf("%s exists", key)
		}
	}
}

// TestRecording: what the Adaptation tells the recorder ends in the
// series the package documents, and a forgotten plugin's series go while
// another's stay.
func TestRecording(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.RecordPluginCount(2)
	m.RecordRequest("10-a", "CreateContainer", time.Millisecond, 0)
	m.RecordRequest("10-a", "CreateContainer", 3*time.Millisecond, adaptation.FailureTimeout)
	m.RecordRequest("10-a", "Configure", time.Millisecond, adaptation.FailureRejected)
	m.RecordFailure("10-a", "StartContainer")
	m.RecordDenied(context.Background(), "10-a", "adjust.env")
	m.RecordAudited(context.Background(), "10-a", "adjust.env")
	m.RecordAudited(context.Background(), "10-a", "adjust.env")
	skips := m.PluginSkips("10-a", api.MustParseEventMask("CreateContainer", "StopContainer"))
	skips.Skipped(api.Event_CREATE_CONTAINER, false)
	skips.Skipped(api.Event_STOP_CONTAINER, true)
	skips.Skipped(api.Event_STOP_CONTAINER, true)
	skips.Skipped(api.Event_START_CONTAINER, false) // not subscribed: not counted
	skips.Skipped(api.Event(-1), false)             // not an event: ignored
	m.RecordRequest("20-b", "CreateContainer", time.Millisecond, 0)

	checkSeries(t, gather(t, reg), map[string]float64{
		"nri_plugins{}": 2,
		"nri_plugin_requests_total{plugin=10-a,request=CreateContainer}":           2,
		"nri_plugin_request_duration_seconds{plugin=10-a,request=CreateContainer}": 2,
		"nri_plugin_request_errors_total{plugin=10-a,request=CreateContainer}":     1,
		"nri_plugin_request_timeouts_total{plugin=10-a,request=CreateContainer}":   1,
		"nri_plugin_request_errors_total{plugin=10-a,request=Configure}":           1,
		"nri_plugin_request_errors_total{plugin=10-a,request=StartContainer}":      1,
		"nri_plugin_denied_total{action=denied,field=adjust.env,plugin=10-a}":      1,
		"nri_plugin_denied_total{action=audited,field=adjust.env,plugin=10-a}":     2,
		"nri_plugin_events_filtered_total{plugin=10-a,request=CreateContainer}":    1,
		"nri_plugin_events_filtered_total{plugin=10-a,request=StopContainer}":      0,
		"nri_plugin_events_opted_out_total{plugin=10-a,request=StopContainer}":     2,
		"nri_plugin_requests_total{plugin=20-b,request=CreateContainer}":           1,
	}, "nri_plugin_request_timeouts_total{plugin=10-a,request=Configure}",
		"nri_plugin_request_errors_total{plugin=20-b,request=CreateContainer}",
		"nri_plugin_events_filtered_total{plugin=10-a,request=StartContainer}")

	m.ForgetPlugin("10-a")
	for key := range gather(t, reg) {
		if strings.Contains(key, "plugin=10-a") {
			t.Errorf("%s left after ForgetPlugin", key)
		}
	}
	if got := gather(t, reg)["nri_plugin_requests_total{plugin=20-b,request=CreateContainer}"]; got != 1 {
		t.Errorf("20-b's requests = %v after 10-a was forgotten, want 1", got)
	}
}

// TestNewErrors: a nil registerer, and a registry that already holds the
// metrics (a second Metrics for it), are errors; the failed New leaves
// the registry as it was.
func TestNewErrors(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil || !strings.Contains(err.Error(), "registering metrics") {
		t.Errorf("a second New on one registry: %v", err)
	}
	other := prometheus.NewRegistry()
	// The same metric (a registry keeps a name's labels and help even
	// after Unregister), registered by another collector.
	taken := prometheus.NewGauge(prometheus.GaugeOpts{Name: adaptation.MetricPlugins,
		Help: "NRI plugins receiving events (synchronizing or active)."})
	if err := other.Register(taken); err != nil {
		t.Fatal(err)
	}
	if _, err := New(other); err == nil {
		t.Fatal("New succeeded on a registry holding one of its names")
	}
	// What the failed New registered is undone: once the name is free,
	// New succeeds on the same registry.
	other.Unregister(taken)
	if _, err := New(other); err != nil {
		t.Errorf("New after the conflict is gone: %v", err)
	}
}
