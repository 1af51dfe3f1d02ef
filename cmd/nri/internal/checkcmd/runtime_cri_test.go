package checkcmd

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckRuntimeCRIUsage: the flags of the checks through CRI go
// together, and --run must compile; each mistake is a usage error that
// says which flag is missing or wrong.
func TestCheckRuntimeCRIUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cri-socket", "/tmp/cri.sock"}, "--cri-socket needs --image"},
		{[]string{"--image", "busybox"}, "need --cri-socket"},
		{[]string{"--pod-network"}, "need --cri-socket"},
		{[]string{"--cri-socket", "/tmp/cri.sock", "--image", "busybox", "--run", "("}, "--run: "},
	} {
		_, err := run(t, append([]string{"runtime", "--socket", "/tmp/nri.sock"}, tc.args...)...)
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a UsageError saying %q", tc.args, err, tc.want)
		}
	}
}
