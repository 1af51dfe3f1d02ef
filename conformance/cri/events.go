package cri

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventWait bounds the wait for an event the runtime should already have
// sent when the CRI call that causes it returned.
const eventWait = 10 * time.Second

// within returns the run's context bounded by d more.
func (r *run) within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, d)
}

// waitKind waits for an event of kind about the pod podID (any pod if
// empty) or the container ctrID (any if empty).
func (r *run) waitKind(p *plugin, kind api.Event, podID, ctrID string) (*event, error) {
	ctx, cancel := r.within(eventWait)
	defer cancel()
	ev, err := p.wait(ctx, func(ev *event) bool { return ev.Kind == kind && ev.about(podID, ctrID) })
	if err != nil {
		return nil, fmt.Errorf("no %s within %s", eventName(kind), eventWait)
	}
	return ev, nil
}

// about reports whether the event is about the pod podID (any if empty)
// and the container ctrID (any if empty).
func (ev *event) about(podID, ctrID string) bool {
	if podID != "" && ev.Pod.GetId() != podID && ev.Ctr.GetPodSandboxId() != podID {
		return false
	}
	return ctrID == "" || ev.Ctr.GetId() == ctrID
}

// kindsOf returns the kinds of the events about podID/ctrID, in order.
func kindsOf(evs []*event, podID, ctrID string) []api.Event {
	var out []api.Event
	for _, ev := range evs {
		if ev.about(podID, ctrID) {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// eventName is an event's name as the protocol's methods have it.
func eventName(e api.Event) string {
	if e == api.Event_VALIDATE_CONTAINER_ADJUSTMENT {
		return "ValidateContainerAdjustment"
	}
	var b strings.Builder
	for _, w := range strings.Split(e.String(), "_") {
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}

// kindNames joins event names with arrows.
func kindNames(ks []api.Event) string {
	if len(ks) == 0 {
		return "none"
	}
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = eventName(k)
	}
	return strings.Join(names, "→")
}

// subset reports the keys of want that got lacks or has with another
// value.
func subset(got, want map[string]string) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[k]; !ok || v != want[k] {
			bad = append(bad, k)
		}
	}
	return bad
}

// checkPod compares the pod of an NRI event with the pod as the checker
// configured it and as CRI reports it, and notes the optional fields.
func checkPod(f *findings, pod *api.PodSandbox, id string, cfg *runtimeapi.PodSandboxConfig, st *runtimeapi.PodSandboxStatus) {
	md := cfg.GetMetadata()
	f.check(pod.GetId() == id, "pod id %q, CRI says %q", pod.GetId(), id)
	f.check(pod.GetName() == md.GetName(), "pod name %q, want %q", pod.GetName(), md.GetName())
	f.check(pod.GetNamespace() == md.GetNamespace(), "pod namespace %q, want %q", pod.GetNamespace(), md.GetNamespace())
	f.check(pod.GetUid() == md.GetUid(), "pod uid %q, want %q", pod.GetUid(), md.GetUid())
	if bad := subset(pod.GetLabels(), cfg.GetLabels()); len(bad) > 0 {
		f.problem("pod labels lack or change %s", strings.Join(bad, ", "))
	}
	if bad := subset(pod.GetAnnotations(), cfg.GetAnnotations()); len(bad) > 0 {
		f.problem("pod annotations lack or change %s", strings.Join(bad, ", "))
	}
	var absent []string
	if pod.GetPid() > 0 {
		f.saw("pid %d", pod.GetPid())
	} else {
		absent = append(absent, "pid")
	}
	if cg := pod.GetLinux().GetCgroupsPath(); cg != "" {
		f.saw("cgroups_path %s", cg)
	} else {
		absent = append(absent, "cgroups_path")
	}
	if ns := netnsOf(pod.GetLinux().GetNamespaces()); ns != "" {
		f.saw("netns %s", ns)
	} else if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_POD {
		absent = append(absent, "netns")
	}
	var criIPs []string
	if st != nil {
		if ip := st.GetNetwork().GetIp(); ip != "" {
			criIPs = append(criIPs, ip)
		}
		for _, ip := range st.GetNetwork().GetAdditionalIps() {
			criIPs = append(criIPs, ip.GetIp())
		}
	}
	switch {
	case len(pod.GetIps()) > 0:
		f.saw("ips %s", strings.Join(pod.GetIps(), ","))
		for _, ip := range criIPs {
			f.check(slices.Contains(pod.GetIps(), ip), "pod ips %v lack %s, which CRI reports", pod.GetIps(), ip)
		}
	case len(criIPs) > 0:
		f.problem("no pod ips, CRI reports %s", strings.Join(criIPs, ","))
	default:
		absent = append(absent, "ips (none in CRI either)")
	}
	if len(absent) > 0 {
		f.saw("not sent: %s", strings.Join(absent, ", "))
	}
}

// netnsOf returns the network namespace path among namespaces.
func netnsOf(nss []*api.LinuxNamespace) string {
	for _, ns := range nss {
		if ns.GetType() == "network" {
			return ns.GetPath()
		}
	}
	return ""
}

// checkContainer compares the container of an NRI event with the
// container as the checker configured it.
func checkContainer(f *findings, what string, ctr *api.Container, id, podID string, cfg *runtimeapi.ContainerConfig) {
	f.check(ctr.GetId() == id, "%s: container id %q, CRI says %q", what, ctr.GetId(), id)
	f.check(ctr.GetPodSandboxId() == podID, "%s: pod_sandbox_id %q, want %q", what, ctr.GetPodSandboxId(), podID)
	f.check(ctr.GetName() == cfg.GetMetadata().GetName(), "%s: container name %q, want %q", what, ctr.GetName(), cfg.GetMetadata().GetName())
	if bad := subset(ctr.GetLabels(), cfg.GetLabels()); len(bad) > 0 {
		f.problem("%s: labels lack or change %s", what, strings.Join(bad, ", "))
	}
	if bad := subset(ctr.GetAnnotations(), cfg.GetAnnotations()); len(bad) > 0 {
		f.problem("%s: annotations lack or change %s", what, strings.Join(bad, ", "))
	}
	for _, kv := range cfg.GetEnvs() {
		f.check(slices.Contains(ctr.GetEnv(), kv.GetKey()+"="+string(kv.GetValue())), "%s: env lacks %s=%s", what, kv.GetKey(), string(kv.GetValue()))
	}
	if cmd := cfg.GetCommand(); len(cmd) > 0 {
		want := slices.Concat(cmd, cfg.GetArgs())
		f.check(slices.Equal(ctr.GetArgs(), want), "%s: args %q, want %q", what, ctr.GetArgs(), want)
	}
}
