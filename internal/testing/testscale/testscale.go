// Package testscale stretches the time bounds of tests to the machine they
// run on, so that a test holds on a busy machine (a newcomer's laptop
// building something else, a CI runner shared with other jobs) as it does
// on a quiet one.
//
// A test gives the bounds it would use on a quiet machine to [D]: a
// registration timeout it waits for a plugin within, a deadline it
// expects an answer by. What a test asserts about the order of events or
// about a bound the code under test must keep (an answer within twice the
// timeout the test configured) stays as it is, measured against the
// scaled bound. Where the bound itself is what the test proves (deliveries
// are concurrent, a loop stops), stretching the bound alone proves
// nothing: such a test stretches what makes the case it rules out slower
// too (each plugin's delay, so that serial delivery still takes three
// times as long), or counts instead of timing.
//
// The factor is NRIKIT_TEST_SCALE if set (a number, at least 1), else the
// machine's load: one plus the load per CPU, at most [MaxFactor]. The load
// is the larger of the one-minute load average and the number of threads
// runnable now besides the caller: the average lags a minute behind two
// CPU hogs started just before the tests, the count does not. It is read
// at each call, so a test that starts on a quiet machine and meets a busy
// one later scales its later bounds.
package testscale

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// EnvVar names the variable that sets the factor.
const EnvVar = "NRIKIT_TEST_SCALE"

// MaxFactor caps the factor computed from the load: a machine this busy
// is not running the tests.
const MaxFactor = 8

// Factor returns how much longer than on a quiet machine a bound should
// be now (at least 1).
func Factor() float64 {
	if v := os.Getenv(EnvVar); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1 {
			return f
		}
	}
	return fromLoad(readLoad(), runtime.NumCPU())
}

// fromLoad is the factor of a load on ncpu CPUs.
func fromLoad(load float64, ncpu int) float64 {
	if load <= 0 || ncpu <= 0 {
		return 1
	}
	return min(1+load/float64(ncpu), MaxFactor)
}

// readLoad returns the machine's load, or 0 where it cannot be read (not
// Linux).
func readLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	return parseLoad(string(b))
}

// parseLoad returns the load of a /proc/loadavg line ("1.20 0.80 0.50
// 3/412 12345"): the larger of the one-minute average and the threads
// runnable now (3) less the one reading the file; 0 if it is malformed.
func parseLoad(line string) float64 {
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0
	}
	avg, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	if len(f) < 4 {
		return avg
	}
	running, _, _ := strings.Cut(f[3], "/")
	if n, err := strconv.Atoi(running); err == nil {
		avg = max(avg, float64(n-1))
	}
	return avg
}

// D returns d stretched by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
