// Package socketpair creates and wraps the AF_UNIX stream socket pairs that
// an NRI runtime uses to talk to the plugins it launches itself.
//
// The runtime creates a Pair, passes PeerFile to the plugin process through
// exec.Cmd.ExtraFiles (ExtraFiles[0] becomes fd 3 in the child), sets
// EnvPluginSocket to that fd number in the child's environment, and closes
// its copy of the peer end with ClosePeer once the child has started. The
// plugin wraps the inherited descriptor with FileConn.
//
// Socket pairs exist on Linux only: on other systems New, FileConn,
// PeerPID and PeerCred fail with an error that wraps [ErrUnsupported], so that importers
// build everywhere and fail clearly at run time.
package socketpair

import "errors"

// Environment variables set by an NRI runtime for a plugin it launches.
const (
	// EnvPluginName holds the plugin's name.
	EnvPluginName = "NRI_PLUGIN_NAME"
	// EnvPluginIdx holds the plugin's index, which orders plugins.
	EnvPluginIdx = "NRI_PLUGIN_IDX"
	// EnvPluginSocket holds the number of the inherited file descriptor
	// of the plugin's end of the socket pair, for example "3".
	EnvPluginSocket = "NRI_PLUGIN_SOCKET"
)

// Cred is the identity of a socket's peer process (SO_PEERCRED).
type Cred struct {
	// PID, UID and GID are the peer's process, user and group IDs.
	PID, UID, GID int
}

// ErrUnsupported is wrapped by the errors of New, FileConn, PeerPID and PeerCred on
// systems without NRI socket pairs (everything but Linux).
var ErrUnsupported = errors.New("NRI socket pairs are supported on Linux only")
