package simulator

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/record"
)

// statusFields are the fields of a container that are its runtime
// status, not something a plugin sets: a created container has them, its
// proposal does not.
var statusFields = map[string]bool{"state": true, "pid": true, "created_at": true, "started_at": true,
	"finished_at": true, "exit_code": true, "status_reason": true, "status_message": true}

// Comparer compares replayed creations with the node's or with another
// replay's.
type Comparer struct {
	// Redactor hashes the values the replayed plugins set as the
	// recorder did, to compare them with redacted recorded values; nil
	// if the recording is not redacted or no key was given.
	Redactor *record.Redactor
	// Redacted is whether the recording's values are redacted.
	Redacted bool

	uncompared int
}

// Warnings returns what limited the comparisons made so far.
func (c *Comparer) Warnings() []string {
	if c.uncompared == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d value(s) the replayed plugins set could not be compared with the recording's redacted ones: give the recording's key (--key-file)", c.uncompared)}
}

// WithNode compares each replayed creation with the node's, in the order
// of the recording's creations.
func (c *Comparer) WithNode(idx *RecordingIndex, got map[string]*Created) []report.ReplayContainer {
	var out []report.ReplayContainer
	for _, req := range idx.Creations {
		id := req.GetContainer().GetId()
		rc := got[id]
		if rc == nil {
			continue
		}
		node, basis, was := nodeOutcome(idx, rc)
		out = append(out, c.compare(rc, node, basis, was))
	}
	return out
}

// WithBase compares each replayed creation with the base set's.
func (c *Comparer) WithBase(idx *RecordingIndex, got, base map[string]*Created) []report.ReplayContainer {
	var out []report.ReplayContainer
	for _, req := range idx.Creations {
		id := req.GetContainer().GetId()
		rc, bc := got[id], base[id]
		if rc == nil || bc == nil {
			continue
		}
		was := ""
		if bc.Err != nil {
			was = bc.Err.Error()
		}
		out = append(out, c.compare(rc, bc.Container, "base", was))
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
		for _, e := range answers {
			if e.GetError() != "" {
				continue
			}
			rsp, _ := e.Message.(*api.CreateContainerResponse)
			if n, err := Adjusted(rc.Pod, ctr, rsp.GetAdjust()); err == nil {
				ctr = n
			}
		}
		return ctr, "answers", ""
	}
	return created, "created", was
}

// compare compares one replayed creation with the other outcome.
func (c *Comparer) compare(rc *Created, other *api.Container, basis, was string) report.ReplayContainer {
	out := report.ReplayContainer{
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

// diff returns how got differs from want, field by field; with
// onlyChanged (want is a created container, with the runtime's status
// and its own changes), only the fields a plugin changed on either side
// are compared.
func (c *Comparer) diff(proposed, want, got *api.Container, onlyChanged bool) []ocispec.Change {
	w, g := ocispec.Fields(want), ocispec.Fields(got)
	c.redact(g, w)
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
	return ocispec.DiffFields(w, g)
}

// redact hashes the values of got that the replayed plugins set in
// clear, where the recording's are redacted; without a key, such a value
// is left out of the comparison, on both sides.
func (c *Comparer) redact(got, want map[string]string) {
	if !c.Redacted {
		return
	}
	for k, v := range got {
		kind, name, ok := redactable(k)
		if !ok || strings.HasPrefix(v, record.RedactedPrefix) {
			continue
		}
		if c.Redactor == nil {
			if wv, ok := want[k]; ok && strings.HasPrefix(wv, record.RedactedPrefix) {
				c.uncompared++
				delete(got, k)
				delete(want, k)
			}
			continue
		}
		if kind == "env" {
			got[k] = c.Redactor.Env(name, v)
		} else {
			got[k] = c.Redactor.Annotation(name, v)
		}
	}
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
