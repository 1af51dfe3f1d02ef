package queue

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestCatchUpAdmit checks the catch-up filter: objects of the snapshot
// are not created again, objects never seen are not removed, each object
// is created and removed once, other events pass.
func TestCatchUpAdmit(t *testing.T) {
	c := NewCatchUp([]*api.PodSandbox{{Id: "pod-known"}}, []*api.Container{{Id: "ctr-known"}})
	steps := []struct {
		event api.Event
		pod   string
		ctr   string
		want  bool
	}{
		{api.Event_RUN_POD_SANDBOX, "pod-known", "", false},
		{api.Event_CREATE_CONTAINER, "pod-known", "ctr-known", false},
		{api.Event_START_CONTAINER, "pod-known", "ctr-known", true},
		{api.Event_RUN_POD_SANDBOX, "pod-new", "", true},
		{api.Event_RUN_POD_SANDBOX, "pod-new", "", false},
		{api.Event_CREATE_CONTAINER, "pod-new", "ctr-new", true},
		{api.Event_CREATE_CONTAINER, "pod-new", "ctr-new", false},
		{api.Event_REMOVE_CONTAINER, "pod-new", "ctr-new", true},
		{api.Event_REMOVE_CONTAINER, "pod-new", "ctr-new", false},
		{api.Event_REMOVE_CONTAINER, "pod-other", "ctr-never-seen", false},
		{api.Event_REMOVE_POD_SANDBOX, "pod-never-seen", "", false},
		{api.Event_REMOVE_POD_SANDBOX, "pod-known", "", true},
		{api.Event_REMOVE_POD_SANDBOX, "pod-known", "", false},
		{api.Event_REMOVE_CONTAINER, "pod-known", "ctr-known", true},
		{api.Event_UPDATE_CONTAINER, "pod-gone", "ctr-gone", true},
		{api.Event_UNKNOWN, "", "", true},
	}
	for i, st := range steps {
		if got := c.Admit(NewSlot(st.event, st.pod, st.ctr, true)); got != st.want {
			t.Errorf("step %d: %s of %s/%s admitted %v, want %v", i, st.event.Name(), st.pod, st.ctr, got, st.want)
		}
	}
}
