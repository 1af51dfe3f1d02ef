package handler

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestDeclarationsCheck checks that Check refuses event bits that name no
// event, in either mask, and accepts the zero value and real events.
func TestDeclarationsCheck(t *testing.T) {
	unknown := api.EventMask(1 << 30)
	for _, tc := range []struct {
		d    Declarations
		want string // "" for valid
	}{
		{Declarations{}, ""},
		{Declarations{Subscription: api.MaskOf(api.Event_CREATE_CONTAINER), RequiredEvents: api.MaskOf(api.Event_CREATE_CONTAINER)}, ""},
		{Declarations{Subscription: unknown | api.MaskOf(api.Event_CREATE_CONTAINER)}, "subscription: unknown event bits 0x40000000"},
		{Declarations{RequiredEvents: unknown}, "required events: unknown event bits 0x40000000"},
	} {
		err := tc.d.Check()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%+v) = %v, want %q", tc.d, err, tc.want)
		}
	}
}
