package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/fakeruntime"
)

func TestCheckRuntimeNrikitAdaptation(t *testing.T) {
	ctx := testContext(t)
	path := shortSocketPath(t)
	w := newWorld()
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return w.pods, w.containers, nil
	}
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("test-runtime", "v1.0.0", list, update,
		adaptation.WithSocketPath(path), adaptation.WithPluginDir(t.TempDir()), adaptation.WithConfigDir(t.TempDir()))
	if err != nil {
		t.Fatalf("adaptation.New: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()

	r, err := CheckRuntime(ctx, path, RuntimeConfig{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	requireAllPassed(t, r)
	if res := requireCheck(t, r, CheckRuntimeSynchronize); !strings.Contains(res.Reason, "4 pods, 4 containers") {
		t.Errorf("Synchronize reason %q: want the runtime's 4 pods and 4 containers", res.Reason)
	}
	if res := requireCheck(t, r, CheckRuntimeSupported); !strings.Contains(res.Reason, "advertised") || strings.Contains(res.Reason, "not advertised") {
		t.Errorf("supported events reason %q: nrikit's runtime advertises its events", res.Reason)
	}
	if res := requireCheck(t, r, CheckRuntimeUnknownEvent); !res.Passed || res.Informational || !strings.Contains(res.Reason, "InvalidArgument") {
		t.Errorf("unknown event refusal: %+v, want a required pass naming InvalidArgument", res)
	}
	res := requireCheck(t, r, CheckRuntimeUnknownEventReason)
	if !res.Informational || !strings.Contains(res.Reason, "InvalidArgument: ") || !strings.Contains(res.Reason, "unknown events 0x100000") {
		t.Errorf("unknown event reason: %+v, want informational with nrikit's InvalidArgument reason", res)
	}
}

// TestCheckRuntimeContainerdLike checks the checker against a runtime that
// behaves as containerd v2.4.2 does (issue 14): RegisterPlugin answered at
// once, and a subscription with unknown event bits refused after Configure
// by closing the connection, without a reason. Every check the protocol
// requires passes; how the bits were refused is reported as informational.
func TestCheckRuntimeContainerdLike(t *testing.T) {
	path := fakeruntime.Start(t, fakeruntime.Containerd)
	r, err := CheckRuntime(testContext(t), path, RuntimeConfig{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	text := renderText(t, r)
	if r.Failed() {
		t.Fatalf("report failed on a containerd-like runtime:\n%s", text)
	}
	passed, failed := r.Counts()
	if passed != 5 || failed != 0 || r.InformationalCount() != 2 {
		t.Errorf("counts: %d passed, %d failed, %d informational; want 5, 0, 2:\n%s", passed, failed, r.InformationalCount(), text)
	}
	for name, want := range map[string]struct {
		informational bool
		reason        string
	}{
		CheckRuntimeRegisters:          {false, "registered as 99-nri-conformance"},
		CheckRuntimeConfigure:          {false, "containerd v2.4.2 (NRI v0.12.3): registration 5000 ms, request 2000 ms"},
		CheckRuntimeSupported:          {true, "not advertised"},
		CheckRuntimeSynchronize:        {false, "1 part(s): 1 pods, 0 containers"},
		CheckRuntimeInvalidName:        {false, "Unknown: invalid plugin name: "},
		CheckRuntimeUnknownEvent:       {false, "closed the connection after Configure, before Synchronize"},
		CheckRuntimeUnknownEventReason: {true, "closed the connection after Configure without a reason (containerd does this)"},
	} {
		res := requireCheck(t, r, name)
		if !res.Passed || res.Informational != want.informational || !strings.Contains(res.Reason, want.reason) {
			t.Errorf("%s: %+v, want passed, informational=%t, a reason mentioning %q", name, res, want.informational, want.reason)
		}
	}
	for _, want := range []string{
		"PASS  " + CheckRuntimeUnknownEvent,
		"INFO  " + CheckRuntimeUnknownEventReason,
		"INFO  " + CheckRuntimeSupported,
		"result: PASS (5 checks, 2 informational)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failed  bool `json:"failed"`
		Results []struct {
			Name          string `json:"name"`
			Passed        bool   `json:"passed"`
			Informational bool   `json:"informational"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("decoding %s: %v", b.String(), err)
	}
	info := 0
	for _, res := range doc.Results {
		if res.Informational {
			info++
		}
	}
	if doc.Failed || info != 2 || len(doc.Results) != 7 {
		t.Errorf("JSON report: failed=%t, %d informational of %d results; want false, 2 of 7:\n%s", doc.Failed, info, len(doc.Results), b.String())
	}
}

func TestCheckRuntimeSloppyRuntime(t *testing.T) {
	path := fakeruntime.Start(t, fakeruntime.Sloppy)
	r, err := CheckRuntime(testContext(t), path, RuntimeConfig{Timeout: time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	if !r.Failed() {
		t.Fatalf("report did not fail:\n%s", renderText(t, r))
	}
	for name, want := range map[string]struct {
		passed bool
		reason string
	}{
		CheckRuntimeRegisters:          {true, "registered as 99-nri-conformance"},
		CheckRuntimeConfigure:          {false, "request_timeout 0 ms"},
		CheckRuntimeSupported:          {true, "not advertised"},
		CheckRuntimeSynchronize:        {false, "no Synchronize within 1s"},
		CheckRuntimeInvalidName:        {false, "RegisterPlugin succeeded"},
		CheckRuntimeUnknownEvent:       {false, "RegisterPlugin succeeded and the runtime neither closed the connection nor synchronized"},
		CheckRuntimeUnknownEventReason: {true, "not refused"},
	} {
		res := requireCheck(t, r, name)
		if res.Passed != want.passed || !strings.Contains(res.Reason, want.reason) {
			t.Errorf("%s: passed=%t reason %q, want passed=%t and a reason mentioning %q", name, res.Passed, res.Reason, want.passed, want.reason)
		}
	}
}

// TestCheckRuntimeAcceptsUnknownEvents: a runtime that accepts a
// subscription with unknown event bits (it synchronizes the plugin) fails
// the required check, whatever the informational one says.
func TestCheckRuntimeAcceptsUnknownEvents(t *testing.T) {
	lenient := fakeruntime.Containerd
	lenient.CloseOnUnknownEvents = false
	r, err := CheckRuntime(testContext(t), fakeruntime.Start(t, lenient), RuntimeConfig{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	if _, failed := r.Counts(); failed != 1 || !r.Failed() {
		t.Fatalf("want exactly one failed check:\n%s", renderText(t, r))
	}
	if res := requireCheck(t, r, CheckRuntimeUnknownEvent); res.Passed || !strings.Contains(res.Reason, "accepted the subscription") {
		t.Errorf("%s: %+v, want a failure saying the subscription was accepted", CheckRuntimeUnknownEvent, res)
	}
	if res := requireCheck(t, r, CheckRuntimeUnknownEventReason); !res.Passed || !res.Informational {
		t.Errorf("%s: %+v, want an informational result", CheckRuntimeUnknownEventReason, res)
	}
}

func TestCheckRuntimeNoSocket(t *testing.T) {
	if _, err := CheckRuntime(testContext(t), shortSocketPath(t), RuntimeConfig{}); err == nil {
		t.Fatal("CheckRuntime succeeded without a runtime")
	}
	if _, err := CheckRuntime(testContext(t), "/nonexistent", RuntimeConfig{Name: "bad"}); err == nil {
		t.Fatal("CheckRuntime accepted the checker name \"bad\"")
	}
}
