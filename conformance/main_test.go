package conformance

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperModeEnv) != "" {
		// A helper plugin process: TestHelperProcess exits by itself.
		os.Exit(m.Run())
	}
	if v := os.Getenv(precompileEnv); v != "" {
		os.Exit(precompile(v))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeWASMWorkDir()
		os.Exit(code)
	}))
}
