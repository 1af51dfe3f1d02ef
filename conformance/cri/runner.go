package cri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/conformance"
)

// Config says how Run checks a runtime.
type Config struct {
	// NRISocket is the runtime's NRI socket, where the checker's plugins
	// connect.
	NRISocket string
	// CRISocket is the same runtime's CRI socket.
	CRISocket string
	// Image is the image of the checker's containers; it must be in the
	// runtime's image store: the checker never pulls. Its command (or
	// Command) must keep running; looking inside containers needs `cat`
	// in it.
	Image string
	// Command, if set, replaces the image's command (e.g. sleep 3600).
	Command []string
	// PodNetwork gives the checker's pods a network namespace of their own
	// (the runtime needs a CNI network); by default they use the node's.
	PodNetwork bool
	// CDIDevice is a fully qualified CDI device the runtime can inject
	// (vendor.com/class=name), for the CDI adjustment check.
	CDIDevice string
	// Run, if set, runs only the checks whose ID or name it matches.
	Run *regexp.Regexp
	// Skip, if set, leaves out the checks whose ID or name it matches.
	Skip *regexp.Regexp
	// Parallel is how many checks not marked Serial run at once (default
	// DefaultParallel).
	Parallel int
	// CheckTimeout bounds each check (default DefaultCheckTimeout); its
	// cleanup has a bound of its own.
	CheckTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultParallel     = 4
	DefaultCheckTimeout = 2 * time.Minute
)

// MinHoldTimeout is the shortest plugin request timeout with which the
// checker holds a hook: it holds for the timeout less holdMargin.
const MinHoldTimeout = 1500 * time.Millisecond

// holdMargin is how much earlier than the runtime's request timeout a
// held hook is released.
const holdMargin = 750 * time.Millisecond

// CheckLeftovers is the name of the result that says whether the run
// left pods behind.
const CheckLeftovers = "leaves no pod or container behind"

// env is what every check of one run shares.
type env struct {
	cfg     Config
	cri     *criClient
	nonce   string
	logDir  string
	conf    *api.ConfigureRequest
	timeout time.Duration // the runtime's plugin request timeout

	mu   sync.Mutex
	down string // the check during which the runtime stopped answering

	// syncGate keeps the Synchronize of a plugin registering out of the
	// container stops of checks that count StopContainer events: a
	// registration holds it exclusively, such a stop shares it.
	// containerd v2.4.2 and CRI-O v1.36.3 take a Synchronize that lists a
	// container as CONTAINER_STOPPED for "plugins told" and then send
	// StopContainer to no plugin, when the Synchronize falls between the
	// container's exit and its NRI StopContainer (docs/conformance.md, note
	// 11); those checks judge the runtime's Stop handling, not that race.
	syncGate sync.RWMutex
}

// holdFor is how long a check may hold a hook.
func (e *env) holdFor() time.Duration { return e.timeout - holdMargin }

// Run checks the runtime's NRI contract through CRI: every check of
// Checks (those cfg.Run selects), each with its own pods, containers and
// plugins, removed when it ends. It returns an error only if the
// runtime's sockets cannot be used or the image is missing.
func Run(ctx context.Context, cfg Config) (*conformance.Report, error) {
	if cfg.Image == "" {
		return nil, errors.New("no image: name a local image for the checker's containers")
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	cri, err := dialCRI(cfg.CRISocket)
	if err != nil {
		return nil, err
	}
	defer cri.close()
	sctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	if _, err := cri.version(sctx); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.CRISocket, err)
	}
	switch ok, err := cri.imagePresent(sctx, cfg.Image); {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("image %s is not in the runtime's image store: import it first (the checker never pulls)", cfg.Image)
	}
	e := &env{cfg: cfg, cri: cri, nonce: nonce()}
	if e.logDir, err = os.MkdirTemp("", "nri-check-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(e.logDir)
	if err := e.configure(sctx); err != nil {
		return nil, err
	}

	checks := selected(cfg.Run, cfg.Skip)
	results := make([]conformance.Result, len(checks))
	var serial, parallel []int
	for i, c := range checks {
		if c.Serial {
			serial = append(serial, i)
		} else {
			parallel = append(parallel, i)
		}
	}
	for _, i := range serial {
		results[i] = e.runCheck(ctx, &checks[i])
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, cfg.Parallel)
	for _, i := range parallel {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			results[i] = e.runCheck(ctx, &checks[i])
		}()
	}
	wg.Wait()
	report := &conformance.Report{Results: results}
	report.Results = append(report.Results, e.sweep())
	return report, nil
}

// selected returns the checks whose ID or name run matches (all if nil)
// and skip does not.
func selected(run, skip *regexp.Regexp) []Check {
	matches := func(re *regexp.Regexp, c Check) bool { return re.MatchString(c.ID) || re.MatchString(c.Name) }
	return slices.DeleteFunc(Checks(), func(c Check) bool {
		return (run != nil && !matches(run, c)) || (skip != nil && matches(skip, c))
	})
}

// configure registers a plugin once to learn the runtime's Configure: its
// request timeout bounds every hold.
func (e *env) configure(ctx context.Context) error {
	probe := &Check{ID: "configure"}
	r := newRun(ctx, e, probe)
	defer r.cleanup()
	p, err := r.dialPlugin(pluginSpec{}, api.FullPluginName("99", "nri-check-configure-"+e.nonce))
	if err != nil {
		return err
	}
	conf, err := p.register(ctx, registerTimeout)
	if err != nil {
		return fmt.Errorf("the checker's plugin: %w", err)
	}
	e.conf, e.timeout = conf, time.Duration(conf.GetRequestTimeout())*time.Millisecond
	return nil
}

// runCheck runs one check under its bound, then removes what it made.
func (e *env) runCheck(ctx context.Context, c *Check) conformance.Result {
	start := time.Now()
	res := conformance.Result{Name: c.Name}
	v := e.unmet(c)
	if v == nil {
		v = e.stopped()
	}
	if v == nil {
		cctx, cancel := context.WithTimeout(ctx, e.cfg.CheckTimeout)
		r := newRun(cctx, e, c)
		got := r.guarded()
		cancel()
		if got.kind == verdictFail && e.gone(c) {
			got.reason = "the runtime stopped answering CRI during this check or one run beside it (did it crash?): " + got.reason
		} else if err := r.cleanup(); err != nil {
			got.kind = verdictFail
			got.reason += "; cleanup: " + err.Error()
		}
		v = &got
	}
	res.Duration = time.Since(start)
	res.Reason = v.reason
	switch v.kind {
	case verdictPass:
		res.Passed = true
	case verdictSkip:
		res.Passed, res.Skipped, res.Duration = true, true, 0
	case verdictInfo:
		res.Passed, res.Informational = true, true
	}
	return res
}

// gone reports whether the runtime no longer answers CRI, and if so
// records that it stopped during c: the checks after it are skipped.
func (e *env) gone(c *Check) bool {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := e.cri.version(ctx); err == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down == "" {
		e.down = c.ID
	}
	return true
}

// stopped returns a SKIP verdict once the runtime has stopped answering.
func (e *env) stopped() *verdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down == "" {
		return nil
	}
	v := skip("the runtime stopped answering CRI during %s or a check run beside it", e.down)
	return &v
}

// pingTimeout bounds the CRI call that tells whether the runtime still
// answers.
const pingTimeout = 5 * time.Second

// guarded runs the check, turning a panic into a failure.
func (r *run) guarded() (v verdict) {
	defer func() {
		if p := recover(); p != nil {
			v = fail("checker bug: %v", p)
		}
	}()
	v = r.check.run(r)
	if r.ctx.Err() != nil && v.kind == verdictFail {
		v.reason += fmt.Sprintf(" (the check ran out of its %s)", r.cfg.CheckTimeout)
	}
	return v
}

// unmet returns a SKIP verdict if a need of c known before it runs is not
// met.
func (e *env) unmet(c *Check) *verdict {
	for _, n := range c.Needs {
		var why string
		switch n {
		case NeedHold:
			if e.timeout < MinHoldTimeout {
				why = fmt.Sprintf("the runtime's plugin request timeout %s is shorter than %s: a hook cannot be held safely", e.timeout, MinHoldTimeout)
			}
		case NeedPodNetwork:
			if !e.cfg.PodNetwork {
				why = "pods use the node's network (--pod-network gives them their own, if the runtime has a CNI network)"
			}
		case NeedCDIDevice:
			if e.cfg.CDIDevice == "" {
				why = "no CDI device named (--cdi-device vendor.com/class=name, one the runtime's CDI specs define)"
			}
		}
		if why != "" {
			v := skip("%s", why)
			return &v
		}
	}
	return nil
}

// sweep removes whatever still carries the run's label and reports it:
// every check removes what it made, so anything left is the runtime's.
func (e *env) sweep() conformance.Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	res := conformance.Result{Name: CheckLeftovers}
	if v := e.stopped(); v != nil {
		res.Passed, res.Skipped, res.Reason = true, true, v.reason
		return res
	}
	pods, err := e.cri.listPods(ctx, map[string]string{runLabel: e.nonce})
	if err == nil && len(pods) == 0 {
		res.Passed, res.Reason, res.Duration = true, "no pod of the run is listed", time.Since(start)
		return res
	}
	var names []string
	r := newRun(ctx, e, &Check{ID: "sweep"})
	var errs []error
	for _, p := range pods {
		names = append(names, fmt.Sprintf("%s (%s, %s)", p.GetMetadata().GetName(), short(p.GetId()), p.GetState()))
		errs = append(errs, r.dropPod(ctx, p.GetId()))
	}
	res.Reason = fmt.Sprintf("listed after every check had removed what it made: %s", strings.Join(names, ", "))
	if err := errors.Join(append(errs, err)...); err != nil {
		res.Reason += "; removing them: " + err.Error()
	}
	res.Duration = time.Since(start)
	return res
}

// nonce returns a short random name for the run.
func nonce() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
