// Package syncresult is what the interop/wasm driver's mode sync reports
// to the tests: how nrikit's runtime synchronized a WASM plugin.
package syncresult

// Result is the driver's report, written as JSON.
type Result struct {
	// Pods and Containers are the node's snapshot; Bytes its encoded size
	// as one SynchronizeRequest.
	Pods, Containers, Bytes int
	// State is the plugin's state once the runtime's Start returned, ""
	// if it is not registered.
	State string
	// Requests are the Synchronize requests the runtime sent the plugin,
	// each "ok" or the failure's kind.
	Requests []string
	// GuestSaw are the guest's log messages starting "synchronize:".
	GuestSaw []string
	// Warnings are the runtime's log records of warning level or above,
	// with their error.
	Warnings []string
}
