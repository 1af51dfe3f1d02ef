package chaos

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
)

// bigAnswer is the size of the oversize plugin's CreateContainer answer:
// above the default answer limit, below NRI's message limit.
const bigAnswer = 3_900_000

// TestOversizeAnswer: plugin "10-big" answers CreateContainer with
// ~3.9 MB of adjustments, plugin "20-small" after it is well-behaved. The
// failure is always 10-big's, never 20-small's:
//   - default policy: the answer is over the answer limit, dropped and
//     blamed on 10-big in the log; the creation succeeds with 20-small's
//     adjustment only, and 10-big stays registered;
//   - fail_request: the creation fails with a PluginError of kind
//     FailureOversize naming 10-big;
//   - answer limit raised to the message limit: the answer is taken, but
//     the merged request to 20-small would exceed NRI's message limit, so
//     the creation fails with a FailureOversize (Merged) PluginError
//     naming 10-big, and 20-small never sees it.
//
// Guards against issue 13, problem 5: the next, innocent plugin was
// blamed ("ResourceExhausted ... message length exceed maximum").
func TestOversizeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []adaptation.Option
		args   []string
		env    int // environment variables (1 KiB) of the created container
		merged bool
	}{
		{name: "default policy"},
		{name: "fail_request", args: []string{"-fail-request"}},
		{name: "merged request over the message limit", env: 300, merged: true,
			opts: []adaptation.Option{adaptation.WithMaxAnswerSize(adaptation.MaxMessageSize)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			rt := startRuntime(t, tc.opts...)
			small := startStub(t, rt, "20", "small", "-env", "SMALL=1")
			big := startRaw(t, rt, "10", "big", append([]string{"-answer-bytes", strconv.Itoa(bigAnswer)}, tc.args...)...)
			big.waitLine(t, "REGISTER ok", hangGuard)
			rt.waitState(t, "10-big", adaptation.StateActive, hangGuard)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()

			rsp, took, err := rt.create(ctx, testPod("default", "pod1"), testCtr("pod1", "ctr1", tc.env, 1024))
			within(t, "CreateContainer with an oversize answer", took, 2*requestTimeout+slack)
			big.waitLine(t, "EVENT CreateContainer pod1 ctr1", hangGuard)
			for _, r := range rt.logs.find(func(r logRecord) bool {
				return r.attrs["plugin"] == "20-small" && (r.level > slog.LevelInfo || strings.Contains(r.msg, "fail"))
			}) {
				t.Errorf("the innocent plugin is blamed: %s", r)
			}
			if err != nil && strings.Contains(err.Error(), "20-small") {
				t.Errorf("the error names the innocent plugin: %v", err)
			}
			if tc.name == "default policy" {
				if err != nil {
					t.Fatalf("CreateContainer: %v", err)
				}
				env := envOf(rsp)
				if env["SMALL"] != "1" || len(env) != 1 {
					t.Errorf("adjusted environment has %d variables (SMALL=%q), want only SMALL=1", len(env), env["SMALL"])
				}
				rec := rt.logs.wait(t, hangGuard, "10-big's answer refused",
					about("10-big", "plugin answer too large, not using it"))
				t.Logf("runtime log: %s", rec)
				if _, ok := rt.plugin("10-big"); !ok {
					t.Error("10-big was disconnected for an oversize answer")
				}
				return
			}
			var perr *adaptation.PluginError
			if !errors.As(err, &perr) {
				t.Fatalf("CreateContainer: error %v (%T), want a *adaptation.PluginError", err, err)
			}
			t.Logf("CreateContainer: %v", err)
			if perr.Plugin != "10-big" || perr.Kind != adaptation.FailureOversize {
				t.Errorf("PluginError names %q, kind %s; want 10-big, %s", perr.Plugin, perr.Kind, adaptation.FailureOversize)
			}
			var serr *adaptation.AnswerSizeError
			if !errors.As(err, &serr) {
				t.Fatalf("PluginError wraps %v (%T), want an *adaptation.AnswerSizeError", perr.Err, perr.Err)
			}
			if serr.Merged != tc.merged || serr.Size <= serr.Limit {
				t.Errorf("AnswerSizeError %+v: want Merged=%v and Size above Limit", *serr, tc.merged)
			}
			if lines := small.with("EVENT CreateContainer pod1 ctr1"); len(lines) > 0 {
				t.Error("20-small was sent the creation although 10-big's failure failed it")
			}
		})
	}
}

// registerLine parses "REGISTER error code=C len=N msg=..." of a raw
// plugin.
var registerLine = regexp.MustCompile(`^REGISTER error code=(\w+) len=(\d+) msg=(.*)$`)

// TestHugeNames: a plugin registering with a 32 KiB name, or a 32 KiB
// index, is refused with InvalidArgument and a short message (the name's
// refusal says the limit, api.MaxPluginNameLength); one announcing a
// 32 KiB NRI version is accepted. A RegisterPlugin of 1 MiB, above what a
// plugin may send before it is configured (64 KiB), closes the connection
// and the runtime's log says why. Each time the runtime logs less than
// 64 KiB. Guards against issue 13, problem 6: names of 1 MiB and 4 MB
// were accepted, and each such registration logged ~16 MB.
func TestHugeNames(t *testing.T) {
	const logBound = 64 << 10
	for _, tc := range []struct {
		name, flag string
		size       int
		// refused: the runtime answers with InvalidArgument naming
		// mention; closed: the message is too large for a plugin that has
		// not registered, so the connection is closed and only the
		// runtime's log says why.
		refused, closed bool
		mention         string
	}{
		{"name", "-name-bytes", 32 << 10, true, false, "the limit is " + strconv.Itoa(api.MaxPluginNameLength)},
		{"index", "-idx-bytes", 32 << 10, true, false, "index"},
		{"version", "-version-bytes", 32 << 10, false, false, ""},
		{"name-1MiB", "-name-bytes", 1 << 20, false, true, ""},
		{"version-1MiB", "-version-bytes", 1 << 20, false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			rt := startRuntime(t)
			logged := rt.logs.bytes()
			p := startRaw(t, rt, "10", "huge", tc.flag, strconv.Itoa(tc.size), "-behave", "leave")
			line := p.waitLine(t, "REGISTER", hangGuard)
			switch {
			case tc.closed:
				if line.text == "REGISTER ok" {
					t.Fatalf("a %d-byte RegisterPlugin was accepted", tc.size)
				}
				rt.logs.wait(t, hangGuard, "the reason in the runtime's log", func(r logRecord) bool {
					return r.msg == "plugin registration failed" && (strings.Contains(r.attrs["error"], "exceeds maximum") || strings.Contains(r.attrs["error"], "before it was configured"))
				})
				p.waitExit(t, hangGuard)
			case !tc.refused:
				if line.text != "REGISTER ok" {
					t.Fatalf("registration refused: %s", line.text)
				}
				p.waitLine(t, "LEAVING", hangGuard)
				rt.waitGone(t, "10-huge", hangGuard)
			default:
				m := registerLine.FindStringSubmatch(line.text)
				if m == nil {
					t.Fatalf("registration not refused: %s", line.text)
				}
				t.Logf("refusal: %s", line.text)
				if m[1] != "InvalidArgument" {
					t.Errorf("refused with code %s, want InvalidArgument", m[1])
				}
				if n, _ := strconv.Atoi(m[2]); n >= 1024 {
					t.Errorf("refusal message is %d bytes, want less than 1 KiB", n)
				}
				if !strings.Contains(m[3], tc.mention) {
					t.Errorf("refusal message does not say %q", tc.mention)
				}
				rt.logs.wait(t, hangGuard, "registration failure", func(r logRecord) bool {
					return r.msg == "plugin registration failed"
				})
				p.waitExit(t, hangGuard)
			}
			time.Sleep(50 * time.Millisecond) // anything logged late
			if n := rt.logs.bytes() - logged; n >= logBound {
				t.Errorf("the runtime logged %d bytes for the registration, want less than %d", n, logBound)
			} else {
				t.Logf("the runtime logged %d bytes for the registration", n)
			}
		})
	}
}
