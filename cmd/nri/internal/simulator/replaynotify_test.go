package simulator

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"github.com/nrikit/nrikit/record/runtimerec"
)

// TestReplayNotification replays a request of every event through
// replayNotification (generated from the event table) into a runtime
// that records what it relays: every notification reaches the runtime's
// plugins once, and the other events are left to the replay's own cases.
func TestReplayNotification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	no := false
	rec, err := runtimerec.Start(record.Config{Path: path, Redact: &no}, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	store := runtimetest.NewStore()
	a, err := adaptation.New("test-runtime", "v9", store.List, store.Update,
		append([]adaptation.Option{adaptation.WithDisabledExternalConnections()}, rec.Options()...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod-1", Name: "p", Namespace: "ns"}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c"}
	want := map[api.Event]int{}
	for _, e := range api.Events() {
		mt, err := record.MessageType(recordpb.Kind_REQUEST, e)
		if err != nil {
			t.Fatal(err)
		}
		m := mt.New()
		for name, v := range map[protoreflect.Name]protoreflect.Message{"pod": pod.ProtoReflect(), "container": ctr.ProtoReflect()} {
			if fd := m.Descriptor().Fields().ByName(name); fd != nil {
				m.Set(fd, protoreflect.ValueOfMessage(v))
			}
		}
		notification := e.Info().Kind == api.EventNotification
		if got := replayNotification(ctx, a, m.Interface()); got != notification {
			t.Errorf("%s: replayNotification %v, want %v", e.Name(), got, notification)
		}
		if notification {
			want[e] = 1
		}
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[api.Event]int{}
	for _, en := range r.Entries {
		if en.GetKind() == recordpb.Kind_REQUEST {
			got[en.GetEvent()]++
		}
	}
	if len(want) == 0 {
		t.Fatal("the event table has no notification")
	}
	for e, n := range want {
		if got[e] != n {
			t.Errorf("%s: the runtime relayed %d requests, want %d (all: %v)", e.Name(), got[e], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the runtime relayed %v, want the notifications alone: %v", got, want)
	}
}
