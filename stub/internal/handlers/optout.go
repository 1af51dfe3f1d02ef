package handlers

import (
	"errors"

	"github.com/nrikit/nrikit/api"
)

// The opt-out sentinels, one value for the stub and stub/wasmguest (each
// exports them under its own name, documented there), so that a plugin
// built for both returns the same error in either.
var (
	// ErrNotInterestedInPod opts out of further events about a pod.
	ErrNotInterestedInPod = errors.New("stub: not interested in pod")
	// ErrNotInterestedInContainer opts out of further events about a
	// container.
	ErrNotInterestedInContainer = errors.New("stub: not interested in container")
)

// OptOut turns an opt-out sentinel a handler returned (err, also
// wrapped) into the OptOut to answer with (nil if the object has no ID);
// ok is false if err is not a sentinel.
func OptOut(err error, pod *api.PodSandbox, ctr *api.Container) (out *api.OptOut, ok bool) {
	switch {
	case errors.Is(err, ErrNotInterestedInPod):
		if id := pod.GetId(); id != "" {
			return &api.OptOut{PodIds: []string{id}}, true
		}
		return nil, true
	case errors.Is(err, ErrNotInterestedInContainer):
		if id := ctr.GetId(); id != "" {
			return &api.OptOut{ContainerIds: []string{id}}, true
		}
		return nil, true
	}
	return nil, false
}

// IgnoreOptOut treats an opt-out sentinel as success, for responses
// without an OptOut field.
func IgnoreOptOut(err error) error {
	if IsOptOut(err) {
		return nil
	}
	return err
}

// IsOptOut reports whether err is (or wraps) an opt-out sentinel.
func IsOptOut(err error) bool {
	return errors.Is(err, ErrNotInterestedInPod) || errors.Is(err, ErrNotInterestedInContainer)
}
