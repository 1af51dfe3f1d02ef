package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// adjustCase is one adjustable field of CreateContainer's answer: how the
// checker's plugin adjusts it, how the OCI spec the runtime reports must
// show it, and where it shows inside the running container.
type adjustCase struct {
	// field names the field in the check's name.
	field string
	// needs are the check's needs.
	needs []Need
	// unmet, if set, returns why the node cannot take the adjustment.
	unmet func(r *run) string
	// adjust fills the adjustment of the container ev is about; it may
	// return why it cannot adjust this container (the check is skipped).
	adjust func(r *run, ev *event, a *api.ContainerAdjustment) string
	// spec returns nil if the spec shows the adjustment.
	spec func(r *run, s *rspec.Spec) error
	// files are where the adjustment shows inside the container (the first
	// one `cat` can read); inside judges what it read.
	files  []string
	inside func(r *run, file, out string) error
	// compare, if set, judges the spec against that of a container the
	// plugin did not adjust (in the same pod).
	compare func(base, got *rspec.Spec) (string, error)
	// effect, if set, looks for the adjustment's effect on the node.
	effect func(r *run) error
	// decides completes the check's description.
	decides string
}

// adjustChecks returns a check per adjustable field.
func adjustChecks() []Check {
	var out []Check
	for _, c := range adjustCases {
		out = append(out, Check{
			ID:    "adjust-" + strings.ToLower(strings.NewReplacer(" ", "-", "_", "-").Replace(c.field)),
			Name:  "adjusted " + c.field + " reaches the container",
			Needs: c.needs,
			Decides: "the plugin's CreateContainer answer " + c.decides + "; the container starts, ContainerStatus's " +
				"OCI spec shows it" + insideText(c),
			run: c.run,
		})
	}
	return out
}

func insideText(c adjustCase) string {
	if len(c.files) == 0 {
		return ""
	}
	return ", and so does " + strings.Join(c.files, " or ") + " inside it (ExecSync cat, where the image has cat)"
}

func (c adjustCase) run(r *run) verdict {
	if c.unmet != nil {
		if why := c.unmet(r); why != "" {
			return skip("%s", why)
		}
	}
	var (
		mu      sync.Mutex
		skipped string
	)
	_, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}, Handle: func(_ context.Context, ev *event) (*answer, error) {
		if ev.Ctr.GetAnnotations()[baselineAnnotation] != "" {
			return nil, nil
		}
		a := &api.ContainerAdjustment{}
		if why := c.adjust(r, ev, a); why != "" {
			mu.Lock()
			skipped = why
			mu.Unlock()
			return nil, nil
		}
		return &answer{adjust: a}, nil
	}})
	if err != nil {
		return fail("%v", err)
	}
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	var base *rspec.Spec
	if c.compare != nil {
		cfg := r.containerConfig(pod)
		cfg.Annotations[baselineAnnotation] = "1"
		id, err := r.newContainer(podID, pod, cfg)
		if err != nil {
			return fail("the container without the adjustment: %v", err)
		}
		ci, err := r.cri.inspect(r.ctx, id)
		if err != nil || ci.Spec == nil {
			return skip("the runtime reports no OCI spec to compare (%v)", err)
		}
		base = ci.Spec
	}
	id, err := r.newContainer(podID, pod, nil)
	mu.Lock()
	why := skipped
	mu.Unlock()
	if why != "" {
		return skip("%s", why)
	}
	if err != nil {
		return fail("the container with the adjustment: %v", err)
	}
	ci, err := r.cri.inspect(r.ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	switch {
	case ci.Spec == nil:
		f.saw("the runtime reports no OCI spec")
	case c.spec != nil:
		if err := c.spec(r, ci.Spec); err != nil {
			f.problem("spec: %v", err)
		} else {
			f.saw("in the spec")
		}
	case c.compare != nil:
		if what, err := c.compare(base, ci.Spec); err != nil {
			f.problem("spec: %v", err)
		} else {
			f.saw("in the spec: %s", what)
		}
	}
	if len(c.files) > 0 {
		out, file, err := r.catFirst(id, c.files)
		switch {
		case err != nil:
			f.saw("not looked at inside: %v", err)
		case c.inside(r, file, out) != nil:
			f.problem("inside, %s: %v", file, c.inside(r, file, out))
		default:
			f.saw("inside (%s)", file)
		}
	}
	if c.effect != nil {
		if err := c.effect(r); err != nil {
			f.problem("%v", err)
		} else {
			f.saw("took effect")
		}
	}
	if ci.Spec == nil && len(f.problems) == 0 && len(f.seen) == 1 {
		return skip("the runtime reports no OCI spec in ContainerStatus and the container cannot be looked into")
	}
	return f.verdict()
}

// baselineAnnotation marks a container the adjustment checks' plugin
// leaves alone.
const baselineAnnotation = "nri-check.nrikit.dev/baseline"

// execTimeout bounds one ExecSync of the checker.
const execTimeout = 10 * time.Second

// catFirst reads the first of files that `cat` can read in the
// container.
func (r *run) catFirst(id string, files []string) (out, file string, err error) {
	var errs []error
	for _, file := range files {
		ctx, cancel := r.within(execTimeout + 5*time.Second)
		out, err := r.cri.exec(ctx, id, int64(execTimeout/time.Second), "cat", file)
		cancel()
		if err == nil {
			return out, file, nil
		}
		errs = append(errs, err)
		if !strings.Contains(err.Error(), "exit ") {
			break // cat itself cannot run: no use trying the next file
		}
	}
	return "", "", errors.Join(errs...)
}

// fieldIs returns nil if got is want, or an error naming the field.
func fieldIs[T comparable](name string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s is %v, want %v", name, got, want)
	}
	return nil
}

// firstLine returns the first line of s, trimmed.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

// clip shortens s for a message.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\x00", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
