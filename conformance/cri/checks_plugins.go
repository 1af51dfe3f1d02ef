package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
)

// Names of the checks of several plugins.
const (
	CheckPluginTimeout  = "unresponsive plugin: timed out, then dropped"
	CheckIndexOrder     = "plugins called in index order"
	CheckRequiredPlugin = "required plugins enforced"
)

// requiredPluginsAnnotation is the pod annotation naming plugins the
// runtime's default validator requires for the pod's containers.
const requiredPluginsAnnotation = "required-plugins.noderesource.dev/pod"

var pluginChecks = []Check{
	{
		ID: "plugin-timeout", Name: CheckPluginTimeout, Serial: true, run: pluginTimeout,
		Decides: "a plugin that never answers CreateContainer: the CRI call returns within the runtime's request " +
			"timeout and a margin, the runtime closes that plugin's connection, a plugin with a later index still " +
			"gets the event, and the next container is created without delay",
	},
	{
		ID: "index-order", Name: CheckIndexOrder, run: indexOrder,
		Decides: "three plugins registered as 90, 10, 50 get RunPodSandbox and CreateContainer in the order 10, 50, 90",
	},
	{
		ID: "required-plugin", Name: CheckRequiredPlugin, Needs: []Need{NeedValidator}, run: requiredPlugin,
		Decides: "in a pod annotated " + requiredPluginsAnnotation + " with a plugin that is not there, " +
			"RunPodSandbox or CreateContainer fails naming it; with the checker's own plugin, both succeed (skipped " +
			"when the runtime enforces no required plugins, as upstream's library without its default validator: " +
			"the container is created though the plugin is missing)",
	},
}

func pluginTimeout(r *run) verdict {
	timeout := r.timeout
	slack := max(5*time.Second, timeout)
	// The plugin never answers: not even when the runtime's deadline for
	// the request passes (an error answer then would race the runtime's
	// own timeout), only once its connection is gone or the check ends.
	gone := make(chan struct{})
	mute, err := r.plugin(pluginSpec{Idx: "10", Name: "mute", Events: []api.Event{api.Event_CREATE_CONTAINER}, Handle: func(context.Context, *event) (*answer, error) {
		t := time.NewTimer(timeout + slack)
		defer t.Stop()
		select {
		case <-gone:
		case <-r.ctx.Done():
		case <-t.C:
		}
		return nil, errors.New("nri-check: too late")
	}})
	if err != nil {
		return fail("%v", err)
	}
	go func() { <-mute.closed(); close(gone) }()
	later, err := r.plugin(pluginSpec{Idx: "90", Name: "later", Events: []api.Event{api.Event_CREATE_CONTAINER}})
	if err != nil {
		return fail("%v", err)
	}
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	start := time.Now()
	id, err := r.createContainer(r.ctx, podID, pod, r.containerConfig(pod))
	took := time.Since(start)
	switch {
	case err != nil:
		f.saw("CreateContainer failed after %s: %v", took.Round(time.Millisecond), err)
	default:
		f.saw("CreateContainer succeeded after %s", took.Round(time.Millisecond))
	}
	f.check(took <= timeout+slack, "CreateContainer took %s, more than the request timeout %s and %s", took, timeout, slack)
	t := time.NewTimer(slack)
	select {
	case <-mute.closed():
		f.saw("the unresponsive plugin was dropped")
	case <-t.C:
		f.problem("the runtime kept the unresponsive plugin's connection %s after the timeout", slack)
	}
	t.Stop()
	if err == nil {
		if _, werr := r.waitKind(later, api.Event_CREATE_CONTAINER, "", id); werr != nil {
			f.problem("the plugin with the later index did not get CreateContainer: %v", werr)
		}
	}
	start = time.Now()
	if _, err := r.createContainer(r.ctx, podID, pod, r.containerConfig(pod)); err != nil {
		f.problem("the next CreateContainer: %v", err)
	} else if d := time.Since(start); d > timeout {
		f.problem("the next CreateContainer took %s, as if the dropped plugin were still waited for", d)
	}
	return f.verdict()
}

func indexOrder(r *run) verdict {
	events := []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER}
	var plugins []*plugin
	for _, idx := range []string{"90", "10", "50"} {
		p, err := r.plugin(pluginSpec{Idx: idx, Name: "i" + idx, Events: events})
		if err != nil {
			return fail("%v", err)
		}
		plugins = append(plugins, p)
	}
	podID, _, ctrID, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	for _, kind := range events {
		type call struct {
			idx string
			seq int
		}
		var calls []call
		for i, p := range plugins {
			ev, err := r.waitKind(p, kind, podID, map[api.Event]string{api.Event_CREATE_CONTAINER: ctrID}[kind])
			if err != nil {
				f.problem("plugin %s: %v", []string{"90", "10", "50"}[i], err)
				continue
			}
			calls = append(calls, call{[]string{"90", "10", "50"}[i], ev.Seq})
		}
		slices.SortFunc(calls, func(a, b call) int { return a.seq - b.seq })
		var order []string
		for _, c := range calls {
			order = append(order, c.idx)
		}
		got := strings.Join(order, ", ")
		f.check(got == "10, 50, 90", "%s reached the plugins in the order %s, want 10, 50, 90", eventName(kind), got)
		f.saw("%s: %s", eventName(kind), got)
	}
	return f.verdict()
}

func requiredPlugin(r *run) verdict {
	own, err := r.plugin(pluginSpec{Name: "required", Events: []api.Event{api.Event_CREATE_CONTAINER}})
	if err != nil {
		return fail("%v", err)
	}
	_, ownName, _ := api.ParsePluginName(own.full)
	missing := fmt.Sprintf("nri-check-missing-%s", r.nonce)

	pod := r.podConfig()
	pod.Annotations[requiredPluginsAnnotation] = fmt.Sprintf("[%q]", missing)
	var f findings
	podID, err := r.runPod(r.ctx, pod)
	id := ""
	if err == nil {
		id, err = r.createContainer(r.ctx, podID, pod, r.containerConfig(pod))
	} else {
		f.saw("RunPodSandbox refused")
	}
	switch {
	case err == nil:
		return skip("not enforced: container %s was created though its pod requires the missing plugin %s "+
			"(the runtime's default validator is off)", short(id), missing)
	case strings.Contains(err.Error(), missing):
		f.saw("refused naming the missing plugin: %v", err)
	default:
		f.problem("refused without naming the missing plugin %s: %v", missing, err)
	}
	present := r.podConfig()
	present.Annotations[requiredPluginsAnnotation] = fmt.Sprintf("[%q]", ownName)
	presentID, err := r.runPod(r.ctx, present)
	if err != nil {
		return fail("%v", err)
	}
	if _, err := r.createContainer(r.ctx, presentID, present, r.containerConfig(present)); err != nil {
		f.problem("requiring the checker's own plugin %s, which is there: %v", ownName, err)
	} else {
		f.saw("created when the required plugin is there")
	}
	return f.verdict()
}
