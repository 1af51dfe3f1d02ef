// Package stubtest is a fake NRI runtime for testing plugins in-process.
//
// A [Runtime] accepts connections from plugins (over real socket pairs),
// performs the registration handshake of a nrikit runtime (or, with
// [WithOrder]([UpstreamOrder]), of containerd/nri v0.12.5), synchronizes
// the plugin with the pods and containers given by [WithState], and then
// lets the test send events and inspect the answers through [Plugin].
//
//	func TestMyPlugin(t *testing.T) {
//		rt := stubtest.NewRuntime(t)
//		_, p := rt.StartPlugin(t, &myPlugin{})
//		rsp, err := p.CreateContainer(ctx, pod, ctr)
//		...
//	}
//
// Options make the runtime behave like older or misbehaving runtimes:
// advertise or accept only some events ([WithSupportedEvents],
// [WithAcceptedEvents]), report a runtime name and NRI version
// ([WithRuntime], [WithNRIVersion]), reject the registration
// ([WithRejectRegistration]) or never answer it
// ([WithUnansweredRegistration]). Everything the runtime starts is stopped
// when the test ends. The runtime's writes to a plugin are bounded by the
// longest of its timeouts ([WithTimeouts], [WithSynchronizeTimeout]), so
// that a plugin that stops reading its socket fails the test's request
// instead of hanging the test.
package stubtest
