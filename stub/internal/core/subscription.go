package core

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// runtimeEvents is what the plugin knows about the events a runtime
// delivers.
type runtimeEvents struct {
	// supported are the events the runtime delivers.
	supported api.EventMask
	// known is false if supported is an assumption (the runtime's NRI
	// version could not be determined).
	known bool
	// nriVersion is the runtime's NRI version as reported or inferred,
	// or "" if unknown.
	nriVersion string
	// basis describes where supported comes from, for messages.
	basis string
}

// supportedEvents determines the events the runtime sending req
// delivers: advertised (supported_events), by the reported NRI version, by
// the NRI version inferred from the runtime's name and version, or, failing
// all, the oldest event set.
func supportedEvents(req *api.ConfigureRequest) runtimeEvents {
	nri := req.GetNRIVersion()
	if isUnknownNRIVersion(nri) {
		nri = ""
	}
	if m := api.EventMask(req.GetSupportedEvents()); m != 0 {
		return runtimeEvents{supported: m & api.AllEvents, known: true, nriVersion: nri, basis: "advertised by the runtime"}
	}
	if nri != "" {
		if m, ok := eventsForNRIVersion(nri); ok {
			return runtimeEvents{supported: m, known: true, nriVersion: nri, basis: "NRI " + nri + " reported by the runtime"}
		}
	}
	rt := req.GetRuntimeName() + " " + req.GetRuntimeVersion()
	if inferred, ok := inferNRIVersion(req.GetRuntimeName(), req.GetRuntimeVersion()); ok {
		if m, ok := eventsForNRIVersion(inferred); ok {
			return runtimeEvents{supported: m, known: true, nriVersion: inferred, basis: "NRI " + inferred + " inferred from " + rt}
		}
	}
	basis := fmt.Sprintf("NRI version of %s unknown, assuming the oldest event set", rt)
	if nri != "" {
		basis = fmt.Sprintf("NRI version %q of %s not understood, assuming the oldest event set", nri, rt)
	}
	return runtimeEvents{supported: oldestEvents(), known: false, nriVersion: nri, basis: basis}
}

// subscription is the outcome of resolving a plugin's subscription.
type subscription struct {
	// events is the effective subscription.
	events api.EventMask
	// dropped are wanted events the runtime does not deliver.
	dropped api.EventMask
}

// resolveSubscription intersects the wanted events with those the runtime
// delivers. required events must be delivered; when the runtime's events
// are only assumed, required events are kept and the runtime decides. The
// result must not be empty, as an empty mask means "all events" on the
// wire.
func resolveSubscription(wanted, required api.EventMask, rt runtimeEvents) (subscription, error) {
	supported := rt.supported
	if !rt.known {
		supported |= required
	}
	if missing := required &^ supported; missing != 0 {
		return subscription{}, &UnsupportedEventsError{Events: missing, Supported: rt.supported, Basis: rt.basis, Required: true}
	}
	sub := subscription{events: wanted & supported, dropped: wanted &^ supported}
	if sub.events == 0 {
		return subscription{}, &UnsupportedEventsError{Events: wanted, Supported: rt.supported, Basis: rt.basis}
	}
	return sub, nil
}

// UnsupportedEventsError is the configuration error returned when the
// runtime cannot deliver events the plugin needs: events given with
// Config.Required, or, when Required is false, every event the plugin
// subscribes to.
type UnsupportedEventsError struct {
	// Events are the events the runtime cannot deliver.
	Events api.EventMask
	// Supported are the events the runtime delivers, as far as the plugin
	// could tell.
	Supported api.EventMask
	// Basis describes how the plugin determined Supported, for example
	// "advertised by the runtime" or "NRI v0.8.0, inferred from containerd v1.7.30".
	Basis string
	// Required is true if Events are required events.
	Required bool
}

// Error implements the error interface.
func (e *UnsupportedEventsError) Error() string {
	what := "required events not supported by the runtime"
	if !e.Required {
		what = "the runtime supports none of the subscribed events"
	}
	return fmt.Sprintf("%s: %s (0x%x); supported: %s (%s)",
		what, e.Events, uint32(e.Events), e.Supported, e.Basis)
}

// supportedKey carries the runtime's events in the Configure handler's
// context (see SupportedEvents).
type supportedKey struct{}

// SupportedEvents returns, from the context of the plugin's Configure
// handler, the events the runtime delivers, and whether that is known
// (advertised, or from its NRI version) rather than assumed; 0, false
// outside the Configure handler.
func SupportedEvents(ctx context.Context) (api.EventMask, bool) {
	rt, ok := ctx.Value(supportedKey{}).(runtimeEvents)
	return rt.supported, ok && rt.known
}
