package adaptation

import (
	"sync"
	"time"
)

// The timeouts set by SetPluginRegistrationTimeout and
// SetPluginRequestTimeout. Upstream's API sets them for the whole
// process, before New; nrikit keeps them per Adaptation, so New copies
// them.
var timeouts = struct {
	sync.Mutex
	registration, request time.Duration
}{registration: DefaultPluginRegistrationTimeout, request: DefaultPluginRequestTimeout}

// SetPluginRegistrationTimeout sets the registration timeout of the
// Adaptations created afterwards (d <= 0: the default).
func SetPluginRegistrationTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultPluginRegistrationTimeout
	}
	timeouts.Lock()
	defer timeouts.Unlock()
	timeouts.registration = d
}

// SetPluginRequestTimeout sets the request timeout of the Adaptations
// created afterwards (d <= 0: the default).
func SetPluginRequestTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultPluginRequestTimeout
	}
	timeouts.Lock()
	defer timeouts.Unlock()
	timeouts.request = d
}

func currentTimeouts() (registration, request time.Duration) {
	timeouts.Lock()
	defer timeouts.Unlock()
	return timeouts.registration, timeouts.request
}
