package simulator

import (
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
)

// RecordingIndex is what a recording says the node did: for each
// container's creation, and for each UpdateContainer and StopContainer.
type RecordingIndex struct {
	// Validation is each container's ValidateContainerAdjustment request,
	// by container ID: the container as proposed, the combined
	// adjustment, the owners.
	Validation map[string]*api.ValidateContainerAdjustmentRequest
	// Created is the container PostCreateContainer reported, by ID.
	Created map[string]*api.Container
	// Answers are the plugins' recorded answers to each container's
	// CreateContainer (a runtime's recording), by container ID, in call
	// order.
	Answers map[string][]Answer
	// Creations are the CreateContainer requests, in order.
	Creations []*api.CreateContainerRequest
	// Changes are what the node did in each UpdateContainer and
	// StopContainer, by the sequence number of the event's request.
	Changes map[uint64]*NodeChange
	// PerPlugin is set if the recording has the plugins' own answers
	// (a runtime's recording).
	PerPlugin bool
	// Names are the NAMESPACE/POD/CONTAINER names of the containers the
	// recording knows, by ID.
	Names map[string]string
}

// NodeChange is what a recording says of one UpdateContainer or
// StopContainer on the node.
type NodeChange struct {
	// Answers are the plugins' recorded answers to it (a runtime's
	// recording), in call order.
	Answers []Answer
	// After is the container as PostUpdateContainer reported it after an
	// UpdateContainer (nil if it did not follow, or for StopContainer).
	After *api.Container
}

// eventKey is one event about one container, whose recorded answers
// wait for the event's request: a runtime's recording writes the answers
// as the plugins give them, and the event's request, from its builtin
// observer, once they all have.
type eventKey struct {
	event api.Event
	ctr   string
}

// IndexRecording indexes what a recording says the node did.
func IndexRecording(rec *record.Recording) *RecordingIndex {
	idx := &RecordingIndex{
		Validation: map[string]*api.ValidateContainerAdjustmentRequest{},
		Created:    map[string]*api.Container{},
		Answers:    map[string][]Answer{},
		Changes:    map[uint64]*NodeChange{},
		Names:      map[string]string{},
	}
	pods := map[string]*api.PodSandbox{}
	name := func(c *api.Container) {
		if p := pods[c.GetPodSandboxId()]; p != nil && c.GetId() != "" {
			idx.Names[c.GetId()] = p.GetNamespace() + "/" + p.GetName() + "/" + c.GetName()
		}
	}
	pending := map[eventKey][]Answer{}
	refused := map[eventKey]map[string][]string{} // plugin → fields
	// take returns the answers recorded for k so far, with their
	// refused fields, and forgets them.
	take := func(k eventKey) []Answer {
		answers := pending[k]
		for i := range answers {
			answers[i].Refused = refused[k][answers[i].Plugin]
		}
		delete(pending, k)
		delete(refused, k)
		return answers
	}
	// creating are the containers whose creation is indexed.
	creating := map[string]bool{}
	// lastUpdate is each container's latest UpdateContainer, which a
	// PostUpdateContainer completes.
	lastUpdate := map[string]*NodeChange{}
	for _, e := range rec.Entries {
		switch m := e.Message.(type) {
		case *api.SynchronizeRequest:
			for _, p := range m.GetPods() {
				pods[p.GetId()] = p
			}
			for _, c := range m.GetContainers() {
				name(c)
			}
		case interface{ GetPod() *api.PodSandbox }:
			if p := m.GetPod(); p != nil && len(pods) < MaxReplayObjects {
				pods[p.GetId()] = p
			}
			if c, ok := m.(interface{ GetContainer() *api.Container }); ok && len(idx.Names) < MaxReplayObjects {
				name(c.GetContainer())
			}
		}
		switch e.GetKind() {
		case recordpb.Kind_ANSWER:
			idx.PerPlugin = true
			k := eventKey{e.GetEvent(), e.GetContainerId()}
			pending[k] = append(pending[k], Answer{Plugin: e.GetPlugin(), Response: e.Message, Err: e.GetError()})
			continue
		case recordpb.Kind_REFUSAL:
			k := eventKey{e.GetEvent(), e.GetContainerId()}
			if refused[k] == nil {
				refused[k] = map[string][]string{}
			}
			refused[k][e.GetPlugin()] = append(refused[k][e.GetPlugin()], e.GetRefusedFields()...)
			continue
		case recordpb.Kind_REQUEST:
		default:
			continue
		}
		// A request: the answers so far of its event and container are
		// its own.
		var ctrID string
		if c, ok := e.Message.(interface{ GetContainer() *api.Container }); ok {
			ctrID = c.GetContainer().GetId()
		}
		answers := take(eventKey{e.GetEvent(), ctrID})
		switch m := e.Message.(type) {
		case *api.CreateContainerRequest:
			idx.Creations = append(idx.Creations, m)
			creating[ctrID] = true
			if answers != nil {
				idx.Answers[ctrID] = answers
			}
		case *api.ValidateContainerAdjustmentRequest:
			idx.Validation[ctrID] = m
			if !creating[ctrID] {
				// A recorder that has validation does not take
				// CreateContainer (record.Subscription): the
				// validation stands for it.
				idx.Creations = append(idx.Creations, &api.CreateContainerRequest{Pod: m.GetPod(), Container: m.GetContainer()})
				creating[ctrID] = true
				if a := take(eventKey{api.Event_CREATE_CONTAINER, ctrID}); a != nil {
					idx.Answers[ctrID] = a
				}
			}
		case *api.PostCreateContainerRequest:
			idx.Created[ctrID] = m.GetContainer()
		case *api.UpdateContainerRequest:
			nc := &NodeChange{Answers: answers}
			idx.Changes[e.GetSeq()] = nc
			lastUpdate[ctrID] = nc
		case *api.PostUpdateContainerRequest:
			if nc := lastUpdate[ctrID]; nc != nil && nc.After == nil {
				nc.After = m.GetContainer()
			}
		case *api.StopContainerRequest:
			idx.Changes[e.GetSeq()] = &NodeChange{Answers: answers}
		}
	}
	return idx
}
