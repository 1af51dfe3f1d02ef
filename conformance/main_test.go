package conformance

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// A helper plugin process: TestHelperProcess exits by itself.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		templateGuest.Remove()
		os.Exit(code)
	}))
}
