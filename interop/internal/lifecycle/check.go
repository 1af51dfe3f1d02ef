package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/oracle"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
	"github.com/nrikit/nrikit/interop/internal/record"
)

// ExpectEqual fails t with a field-by-field diff if want and got differ
// after normalization (see protodiff.Normalize).
func ExpectEqual(t testing.TB, what string, want, got proto.Message) {
	t.Helper()
	if d := protodiff.Diff(protodiff.Normalize(want), protodiff.Normalize(got)); len(d) != 0 {
		t.Errorf("%s differs (%d fields):\n  %s", what, len(d), strings.Join(d, "\n  "))
	}
}

// One returns the only record of event, failing t if there is not
// exactly one.
func One(t testing.TB, recs []record.Record, event string) (record.Record, bool) {
	t.Helper()
	rs := record.Filter(recs, event)
	if len(rs) != 1 {
		t.Errorf("plugin recorded %d %s requests, want 1", len(rs), event)
		return record.Record{}, false
	}
	return rs[0], true
}

// Decode decodes b into m, failing t on error.
func Decode[M proto.Message](t testing.TB, b []byte, m M) M {
	t.Helper()
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("decoding %T: %v", m, err)
	}
	return m
}

// CheckDelivered checks that the plugin saw every request of res exactly
// once, with the pod and container data the runtime was given.
func CheckDelivered(t testing.TB, res *Results, recs []record.Record) {
	t.Helper()
	for _, s := range res.Sent {
		r, ok := One(t, recs, s.Event.Name())
		if !ok {
			continue
		}
		got := Decode(t, r.Req, s.Req.ProtoReflect().New().Interface())
		ExpectEqual(t, s.Event.Name()+" request as the plugin saw it", s.Req, got)
	}
}

// CheckValidation checks the ValidateContainerAdjustment request the
// plugin (identified by plugin, "IDX-NAME") saw: the container as given
// to CreateContainer, the merged adjustment the runtime returned, and the
// plugin among the consulted ones.
func CheckValidation(t testing.TB, res *Results, recs []record.Record, plugin string) {
	t.Helper()
	r, ok := One(t, recs, api.Event_VALIDATE_CONTAINER_ADJUSTMENT.Name())
	if !ok {
		return
	}
	got := Decode(t, r.Req, &api.ValidateContainerAdjustmentRequest{})
	create := res.Request(api.Event_CREATE_CONTAINER).(*api.CreateContainerRequest)
	ExpectEqual(t, "validated container", create.Container, got.Container)
	ExpectEqual(t, "validated pod", create.Pod, got.Pod)
	ExpectEqual(t, "validated adjustment", res.Create.GetAdjust(), got.Adjust)
	found := false
	for _, p := range got.Plugins {
		found = found || api.FullPluginName(p.Index, p.Name) == plugin
	}
	if !found {
		t.Errorf("validation request lists plugins %v, not %s", got.Plugins, plugin)
	}
	if got.Owners == nil {
		t.Errorf("validation request has no field owners")
	}
}

// CheckCreate checks the runtime's CreateContainer answer against what an
// Observe plugin sent: its answer must be fixture.FullAdjustment; the
// merged adjustment must equal it field by field (in Canonical form) and
// equal exactly what upstream's runtime makes of the same answer (see
// package oracle), and so must the updates. wantEvict is what the runtime
// should report of the plugin's evictions.
func CheckCreate(t testing.TB, res *Results, recs []record.Record, wantEvict []*api.ContainerEviction) {
	t.Helper()
	r, ok := One(t, recs, api.Event_CREATE_CONTAINER.Name())
	if !ok {
		return
	}
	sent := Decode(t, r.Rsp, &api.CreateContainerResponse{})
	ExpectEqual(t, "adjustment the plugin sent vs fixture.FullAdjustment", fixture.FullAdjustment(), sent.Adjust)
	ExpectEqual(t, "merged adjustment vs the plugin's (canonical form)", Canonical(sent.Adjust), Canonical(res.Create.GetAdjust()))
	ExpectEqual(t, "CreateContainer updates and evictions", &api.CreateContainerResponse{Update: sent.Update, Evict: wantEvict},
		&api.CreateContainerResponse{Update: res.Create.GetUpdate(), Evict: res.Create.GetEvict()})
	if len(sent.Update) != 1 || sent.Update[0].GetContainerId() != fixture.OtherCtrID {
		t.Errorf("plugin sent CreateContainer updates %v, want one of %s", sent.Update, fixture.OtherCtrID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := res.Request(api.Event_CREATE_CONTAINER).(*api.CreateContainerRequest)
	want, err := oracle.Create(ctx, t.TempDir(), req, oracle.Answers{Create: &api.CreateContainerResponse{Adjust: sent.Adjust, Update: sent.Update}})
	if err != nil {
		t.Fatalf("upstream's merge: %v", err)
	}
	ExpectEqual(t, "merged adjustment and updates vs upstream's merge of the same answer",
		want, &api.CreateContainerResponse{Adjust: res.Create.GetAdjust(), Update: res.Create.GetUpdate()})
}

// CheckUpdate checks the runtime's UpdateContainer answer against what an
// Observe plugin sent: its update of the other container and, last, the
// container's own resources as the plugin changed them.
func CheckUpdate(t testing.TB, res *Results, recs []record.Record) {
	t.Helper()
	r, ok := One(t, recs, api.Event_UPDATE_CONTAINER.Name())
	if !ok {
		return
	}
	sent := Decode(t, r.Rsp, &api.UpdateContainerResponse{})
	got := res.Update.GetUpdate()
	if len(got) != 2 {
		t.Fatalf("UpdateContainer returned %d updates, want 2 (the other container, then the container itself): %v", len(got), got)
	}
	ExpectEqual(t, "UpdateContainer update of the other container", sent.Update[1], got[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := res.Request(api.Event_UPDATE_CONTAINER).(*api.UpdateContainerRequest)
	want, err := oracle.Update(ctx, t.TempDir(), req, oracle.Answers{Update: &api.UpdateContainerResponse{Update: sent.Update}})
	if err != nil {
		t.Fatalf("upstream's merge: %v", err)
	}
	ExpectEqual(t, "UpdateContainer result vs upstream's merge of the same answer", want, &api.UpdateContainerResponse{Update: got})
	self := got[1]
	if self.GetContainerId() != fixture.CtrID {
		t.Errorf("last update is for %q, want the container itself (%s)", self.GetContainerId(), fixture.CtrID)
	}
	mem := self.GetLinux().GetResources().GetMemory().GetLimit().GetValue()
	shares := self.GetLinux().GetResources().GetCpu().GetShares().GetValue()
	if mem != behavior.SelfUpdateMiB<<20 || shares != behavior.SelfUpdateMiB {
		t.Errorf("container's own update: memory %d, shares %d; want %d, %d", mem, shares, int64(behavior.SelfUpdateMiB<<20), behavior.SelfUpdateMiB)
	}
}

// CheckStop checks the runtime's StopContainer answer against what an
// Observe plugin sent.
func CheckStop(t testing.TB, res *Results, recs []record.Record) {
	t.Helper()
	r, ok := One(t, recs, api.Event_STOP_CONTAINER.Name())
	if !ok {
		return
	}
	sent := Decode(t, r.Rsp, &api.StopContainerResponse{})
	ExpectEqual(t, "StopContainer updates", sent, res.Stop)
	if len(sent.Update) != 1 {
		t.Errorf("plugin sent %d StopContainer updates, want 1", len(sent.Update))
	}
}
