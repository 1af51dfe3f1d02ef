package handlers

import (
	"errors"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/handler"
)

// OptOut turns an opt-out sentinel a handler returned (err, also
// wrapped) into the OptOut to answer with (nil if the object has no ID);
// ok is false if err is not a sentinel.
func OptOut(err error, pod *api.PodSandbox, ctr *api.Container) (out *api.OptOut, ok bool) {
	switch {
	case errors.Is(err, handler.ErrNotInterestedInPod):
		if id := pod.GetId(); id != "" {
			return &api.OptOut{PodIds: []string{id}}, true
		}
		return nil, true
	case errors.Is(err, handler.ErrNotInterestedInContainer):
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
	return errors.Is(err, handler.ErrNotInterestedInPod) || errors.Is(err, handler.ErrNotInterestedInContainer)
}
