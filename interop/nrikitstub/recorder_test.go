package nrikitstub

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/internal/testbin"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
)

// recorderDir is the recorder plugin's command (nri record, issue 41).
const recorderDir = "../../plugins/recorder/cmd/recorder"

// TestRecorderOnUpstream runs the recorder plugin, which declares itself
// observe-only (ConfigureResponse field 1003, docs/protocol.md §5.5),
// pre-installed beside an ordinary plugin under upstream's runtime, which
// does not know the field: upstream registers it and calls it in its turn
// for every event, the runtime's answers are the ordinary plugin's alone
// (the recorder changed nothing), and the recording holds the runtime's
// snapshot and every event in the order the runtime sent it, with the
// pod and container as sent; the creation as its validation, with the
// adjustment the runtime returned.
func TestRecorderOnUpstream(t *testing.T) {
	t.Parallel()
	const full = "60-nrikit"
	r := newRuntime(t, runtimeName, runtimeVersion)
	r.Install(pluginBin, full, "-mode", string(behavior.Observe))
	out := filepath.Join(t.TempDir(), "node.nrirec")
	if err := testbin.Install(r.Dir, "99-recorder", recorderBin, "-out", out, "-redact=false"); err != nil {
		t.Fatal(err)
	}
	r.start()
	res := r.drive()
	recs := r.recordsOf(full)
	lifecycle.CheckCreate(t, res, recs, nil)
	lifecycle.CheckUpdate(t, res, recs)
	lifecycle.CheckStop(t, res, recs)

	// What upstream sent the recorder, in order: the creation is its
	// validation (record.Subscription), whose request carries the
	// container as proposed and the adjustment the runtime returned.
	var want []api.Event
	for _, s := range res.Sent {
		e := s.Event
		if e == api.Event_CREATE_CONTAINER {
			e = api.Event_VALIDATE_CONTAINER_ADJUSTMENT
		}
		want = append(want, e)
	}
	rec := awaitRecorded(t, out, len(want))
	if h := rec.Header; h.GetSource() != record.SourcePlugin {
		t.Errorf("recording's source %q, want %q", h.GetSource(), record.SourcePlugin)
	}
	var got []api.Event
	var sent int
	for _, e := range rec.Entries {
		switch e.GetKind() {
		case recordpb.Kind_SYNCHRONIZE:
			pods, ctrs := r.List()
			lifecycle.ExpectEqual(t, "recorded snapshot", &api.SynchronizeRequest{Pods: pods, Containers: ctrs}, e.Message)
		case recordpb.Kind_REQUEST:
			got = append(got, e.GetEvent())
			if sent < len(res.Sent) && res.Sent[sent].Event == e.GetEvent() {
				want := proto.Clone(res.Sent[sent].Req)
				if u, ok := want.(*api.UpdateContainerRequest); ok && len(res.Update.GetUpdate()) != 0 {
					// Upstream passes the resources on as each plugin
					// left them: the recorder, last, sees the result.
					self := res.Update.GetUpdate()[len(res.Update.GetUpdate())-1]
					u.LinuxResources = self.GetLinux().GetResources()
				}
				lifecycle.ExpectEqual(t, "recorded "+e.GetEvent().Name(), want, e.Message)
			}
			if e.GetEvent() == api.Event_VALIDATE_CONTAINER_ADJUSTMENT {
				v := e.Message.(*api.ValidateContainerAdjustmentRequest)
				create := res.Request(api.Event_CREATE_CONTAINER).(*api.CreateContainerRequest)
				lifecycle.ExpectEqual(t, "validated container vs created", create.GetContainer(), v.GetContainer())
				lifecycle.ExpectEqual(t, "validated adjustment vs the runtime's (canonical form)",
					lifecycle.Canonical(res.Create.GetAdjust()), lifecycle.Canonical(v.GetAdjust()))
			}
			sent++
		default:
			t.Errorf("a %v record", e.GetKind())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded events %v,\nwant %v", got, want)
	}
}

// awaitRecorded loads the recording at path until it holds n requests
// (the recorder flushes once a second), bounded by hangGuard.
func awaitRecorded(t *testing.T, path string, n int) *record.Recording {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		rec, err := record.Load(path)
		if err == nil {
			var got int
			for _, e := range rec.Entries {
				if e.GetKind() == recordpb.Kind_REQUEST {
					got++
				}
			}
			if got >= n {
				return rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recording holds fewer than %d requests after %v (%v)", n, hangGuard, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
