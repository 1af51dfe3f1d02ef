package simulator

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/merge"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/record"
)

// statusFields are the fields of a container that are its runtime
// status, not something a plugin sets: a created container has them, its
// proposal does not.
var statusFields = map[string]bool{"state": true, "pid": true, "created_at": true, "started_at": true,
	"finished_at": true, "exit_code": true, "status_reason": true, "status_message": true}

// Comparer compares a replay's outcome with the node's or with another
// replay's.
type Comparer struct {
	// Redactor hashes the values the replayed plugins set as the
	// recorder did, to compare them with redacted recorded values; nil
	// if the recording is not redacted or no key was given.
	Redactor *record.Redactor
	// Redacted is whether the recording's values are redacted.
	Redacted bool
	// Names gives a container's NAMESPACE/POD/CONTAINER by its ID, for
	// the containers a change is about (nil: the ID).
	Names func(id string) string

	uncompared int
	unknown    int
}

// Warnings returns what limited the comparisons made so far.
func (c *Comparer) Warnings() []string {
	var out []string
	if c.uncompared > 0 {
		out = append(out, fmt.Sprintf("%d value(s) the replayed plugins set could not be compared with the recording's redacted ones: give the recording's key (--key-file)", c.uncompared))
	}
	if c.unknown > 0 {
		out = append(out, fmt.Sprintf("%d StopContainer event(s) not compared: what the node's plugins asked for in them is only in a runtime's recording (record.yaml), or compare with a base plugin set", c.unknown))
	}
	return out
}

// WithNode compares the replay's outcome with the node's, creations in
// the order of the recording's, then the changes.
func (c *Comparer) WithNode(idx *RecordingIndex, got *Outcome) []report.ReplayContainer {
	var out []report.ReplayContainer
	for _, req := range idx.Creations {
		id := req.GetContainer().GetId()
		rc := got.Created[id]
		if rc == nil {
			continue
		}
		node, basis, was := nodeOutcome(idx, rc)
		rcmp := c.compare(rc, node, basis, was)
		if idx.PerPlugin {
			rcmp.Answers = c.compareAnswers(rc, rc.Answers, idx.Answers[id])
		}
		out = append(out, rcmp)
	}
	for _, ch := range got.Changed {
		nc := idx.Changes[ch.Seq]
		if nc == nil {
			continue
		}
		node, ok := nodeChange(ch, nc, idx.PerPlugin)
		if !ok {
			c.unknown++
			continue
		}
		out = append(out, c.compareChange(ch, node, "node")...)
	}
	return out
}

// WithBase compares the replay's outcome with the base set's.
func (c *Comparer) WithBase(idx *RecordingIndex, got, base *Outcome) []report.ReplayContainer {
	var out []report.ReplayContainer
	for _, req := range idx.Creations {
		id := req.GetContainer().GetId()
		rc, bc := got.Created[id], base.Created[id]
		if rc == nil || bc == nil {
			continue
		}
		was := ""
		if bc.Err != nil {
			was = bc.Err.Error()
		}
		rcmp := c.compare(rc, bc.Container, "base", was)
		rcmp.Answers = c.compareAnswers(rc, rc.Answers, bc.Answers)
		out = append(out, rcmp)
	}
	bySeq := map[uint64]*Changed{}
	for _, ch := range base.Changed {
		bySeq[ch.Seq] = ch
	}
	for _, ch := range got.Changed {
		if b := bySeq[ch.Seq]; b != nil {
			out = append(out, c.compareChange(ch, b, "base")...)
		}
	}
	return out
}

// nodeOutcome is the container the node created (nil if it did not), what
// it was taken from, and why the creation failed.
func nodeOutcome(idx *RecordingIndex, rc *Created) (*api.Container, string, string) {
	id := rc.Proposed.GetId()
	created, ok := idx.Created[id]
	was := ""
	if !ok {
		was = "the node did not create the container"
	}
	if v := idx.Validation[id]; v != nil {
		if !ok {
			return nil, "validation", was
		}
		n, err := Adjusted(v.GetPod(), v.GetContainer(), v.GetAdjust())
		if err == nil {
			return n, "validation", ""
		}
	}
	if answers := idx.Answers[id]; len(answers) > 0 && ok {
		ctr := rc.Proposed
		for _, a := range answers {
			if a.Err != "" || len(a.Refused) > 0 {
				continue // not used by the node
			}
			rsp, _ := a.Response.(*api.CreateContainerResponse)
			if n, err := Adjusted(rc.Pod, ctr, rsp.GetAdjust()); err == nil {
				ctr = n
			}
		}
		return ctr, "answers", ""
	}
	return created, "created", was
}

// nodeChange is what the node's plugins set in an UpdateContainer or
// StopContainer, as a replayed Changed: from the plugins' recorded
// answers, merged again, if the recording has them; else, for an
// UpdateContainer, the container's resources after it (as
// PostUpdateContainer reported them, or as the recorder was asked to
// update them). ok is false if the recording does not tell.
func nodeChange(ch *Changed, nc *NodeChange, perPlugin bool) (*Changed, bool) {
	node := &Changed{Event: ch.Event, Seq: ch.Seq, Pod: ch.Pod, Container: ch.Container, Result: map[string]*api.LinuxResources{}}
	id := ch.Container.GetId()
	if perPlugin {
		var updates []*api.ContainerUpdate
		switch ch.Event {
		case api.Event_UPDATE_CONTAINER:
			u := merge.NewUpdate(ch.Pod, ch.Container, ch.Resources)
			for _, a := range usedAnswers(nc.Answers) {
				rsp, _ := a.Response.(*api.UpdateContainerResponse)
				_ = u.Apply(a.Plugin, rsp) // a conflict failed the event on the node too
			}
			updates = append(u.Updates(), &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{Resources: u.Resources()}})
		default:
			u := merge.NewUpdates()
			for _, a := range usedAnswers(nc.Answers) {
				rsp, _ := a.Response.(*api.StopContainerResponse)
				_ = u.Apply(a.Plugin, rsp.GetUpdate())
			}
			updates = u.List()
		}
		for _, u := range updates {
			node.Result[u.GetContainerId()] = u.GetLinux().GetResources()
		}
		return node, true
	}
	if ch.Event != api.Event_UPDATE_CONTAINER {
		return nil, false
	}
	res := ch.Resources
	if nc.After != nil {
		res = nc.After.GetLinux().GetResources()
	}
	node.Result[id] = res
	return node, true
}

// usedAnswers are the answers a runtime used: not failed, not refused.
func usedAnswers(answers []Answer) []Answer {
	var out []Answer
	for _, a := range answers {
		if a.Err == "" && len(a.Refused) == 0 {
			out = append(out, a)
		}
	}
	return out
}

// compare compares one replayed creation with the other outcome.
func (c *Comparer) compare(rc *Created, other *api.Container, basis, was string) report.ReplayContainer {
	out := report.ReplayContainer{
		Event:   api.Event_CREATE_CONTAINER.Name(),
		Name:    rc.Pod.GetNamespace() + "/" + rc.Pod.GetName() + "/" + rc.Proposed.GetName(),
		ID:      rc.Proposed.GetId(),
		Plugins: rc.Plugins,
		Basis:   basis,
		Was:     was,
	}
	if rc.Err != nil {
		out.Error = rc.Err.Error()
	}
	if rc.Container != nil && other != nil {
		out.Changes = c.diff(rc.Proposed, other, rc.Container, basis == "created")
	}
	out.Differs = len(out.Changes) > 0 || (out.Error == "") != (out.Was == "")
	return out
}

// compareAnswers compares, plugin by plugin (matched by name, whatever
// their index), the replayed plugins' answers to a creation with the
// other side's: each answer applied alone to the proposed container. It
// returns nil if no plugin is on both sides.
func (c *Comparer) compareAnswers(rc *Created, got, other []Answer) []report.PluginAnswer {
	byName := map[string]Answer{}
	for _, a := range other {
		byName[baseName(a.Plugin)] = a
	}
	var out []report.PluginAnswer
	for _, g := range got {
		o, ok := byName[baseName(g.Plugin)]
		if !ok {
			continue // a plugin the other side did not call
		}
		pa := report.PluginAnswer{Plugin: g.Plugin, Error: g.Err, Was: o.Err, Refused: o.Refused}
		if o.Plugin != g.Plugin {
			pa.WasName = o.Plugin
		}
		if g.Err == "" && o.Err == "" {
			mine, err1 := Adjusted(rc.Pod, rc.Proposed, adjustmentOf(g.Response))
			theirs, err2 := Adjusted(rc.Pod, rc.Proposed, adjustmentOf(o.Response))
			if err1 == nil && err2 == nil {
				pa.Changes = c.diff(rc.Proposed, theirs, mine, false)
			}
		}
		pa.Differs = len(pa.Changes) > 0 || pa.Error != pa.Was
		out = append(out, pa)
	}
	return out
}

func adjustmentOf(rsp any) *api.ContainerAdjustment {
	r, _ := rsp.(*api.CreateContainerResponse)
	return r.GetAdjust()
}

// baseName is a plugin's name without its index.
func baseName(full string) string {
	if _, name, err := api.ParsePluginName(full); err == nil {
		return name
	}
	return full
}

// compareChange compares the resources a replayed UpdateContainer or
// StopContainer set with the other side's, container by container: one
// entry for each container either side set something for.
func (c *Comparer) compareChange(got, other *Changed, basis string) []report.ReplayContainer {
	ids := []string{}
	seen := map[string]bool{}
	for _, m := range []map[string]*api.LinuxResources{got.Result, other.Result} {
		for id := range m {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	// The event's own container first, then the others by ID.
	sortIDs(ids, got.Container.GetId())
	var out []report.ReplayContainer
	for _, id := range ids {
		e := report.ReplayContainer{Event: got.Event.Name(), Seq: got.Seq, Name: c.name(id, got), ID: id,
			Plugins: got.Plugins, Basis: basis}
		if got.Err != nil {
			e.Error = got.Err.Error()
		}
		if other.Err != nil {
			e.Was = other.Err.Error()
		}
		if e.Error == "" && e.Was == "" {
			e.Changes = ocispec.DiffFields(resourceFields(other.Result[id]), resourceFields(got.Result[id]))
		}
		e.Differs = len(e.Changes) > 0 || e.Error != e.Was
		out = append(out, e)
	}
	return out
}

// resourceFields are the fields of resources, named as in a container
// (linux.resources.cpu.shares, ...).
func resourceFields(res *api.LinuxResources) map[string]string {
	if res == nil {
		return map[string]string{}
	}
	return ocispec.Fields(&api.Container{Linux: &api.LinuxContainer{Resources: res}})
}

// name is the NAMESPACE/POD/CONTAINER of container id, that of a change
// ch is about or another.
func (c *Comparer) name(id string, ch *Changed) string {
	if id == ch.Container.GetId() {
		return ch.Pod.GetNamespace() + "/" + ch.Pod.GetName() + "/" + ch.Container.GetName()
	}
	if c.Names != nil {
		if n := c.Names(id); n != "" {
			return n
		}
	}
	return id
}

// sortIDs sorts ids, first the one given.
func sortIDs(ids []string, first string) {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] == first || ids[i] != first && ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
}

// diff returns how got differs from want, field by field; with
// onlyChanged (want is a created container, with the runtime's status
// and its own changes), only the fields a plugin changed on either side
// are compared.
func (c *Comparer) diff(proposed, want, got *api.Container, onlyChanged bool) []ocispec.Change {
	w, g := ocispec.Fields(want), ocispec.Fields(got)
	inClear := c.redact(g, w)
	if onlyChanged {
		p := ocispec.Fields(proposed)
		touched := map[string]bool{}
		for _, ch := range append(ocispec.DiffFields(p, g), ocispec.DiffFields(p, w)...) {
			touched[ch.Path] = true
		}
		for _, m := range []map[string]string{w, g} {
			for k := range m {
				if !touched[k] || statusFields[k] {
					delete(m, k)
				}
			}
		}
	}
	changes := ocispec.DiffFields(w, g)
	// A value the replayed plugins set is theirs to see: shown in clear.
	for i, ch := range changes {
		if v, ok := inClear[ch.Path]; ok {
			changes[i].New = v
		}
	}
	return changes
}

// redact hashes the values of got that the replayed plugins set in
// clear where want's are redacted (the recording's; a base set's are in
// clear, as are the values kept), and returns those values in clear by
// field; without a key, such a value is left out of the comparison, on
// both sides.
func (c *Comparer) redact(got, want map[string]string) map[string]string {
	if !c.Redacted {
		return nil
	}
	inClear := map[string]string{}
	for k, v := range got {
		kind, name, ok := redactable(k)
		if !ok || strings.HasPrefix(v, record.RedactedPrefix) {
			continue
		}
		if wv, ok := want[k]; !ok || !strings.HasPrefix(wv, record.RedactedPrefix) {
			continue
		}
		if c.Redactor == nil {
			c.uncompared++
			delete(got, k)
			delete(want, k)
			continue
		}
		inClear[k] = v
		if kind == "env" {
			got[k] = c.Redactor.Env(name, v)
		} else {
			got[k] = c.Redactor.Annotation(name, v)
		}
	}
	return inClear
}

// redactable says whether the field path (of ocispec.Fields) is an
// environment variable or an annotation, and its name.
func redactable(path string) (kind, name string, ok bool) {
	for _, k := range []string{"env", "annotations"} {
		if rest, found := strings.CutPrefix(path, k+"["); found && strings.HasSuffix(rest, "]") {
			return strings.TrimSuffix(k, "s"), strings.TrimSuffix(rest, "]"), true
		}
	}
	return "", "", false
}
