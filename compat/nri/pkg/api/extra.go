package api

import (
	nrikit "github.com/nrikit/nrikit/api"

	"github.com/containerd/nri/pkg/version"
)

// Upstream's names for the versions of pkg/version.
const (
	// UnknownVersion is reported when a version cannot be determined.
	UnknownVersion = version.UnknownVersion
	// DevelVersion is the version Go reports for a module built from its
	// own tree.
	DevelVersion = version.DevelVersion
)

// SELinuxRelabel is the mount pseudo-option asking the runtime to
// relabel the mount's source.
const SELinuxRelabel = "relabel"

// EventPrettyNames names each event as its request does
// ("CreateContainer"): nrikit's Event.Name.
var EventPrettyNames = prettyNames()

func prettyNames() map[Event]string {
	names := map[Event]string{}
	for _, e := range nrikit.Events() {
		names[e] = e.Name()
	}
	return names
}

// File_pkg_api_api_proto is the protocol's file descriptor, nrikit's
// (declared as nrikit/nri.proto, with upstream's package and messages).
var File_pkg_api_api_proto = nrikit.File_nrikit_nri_proto

// NewCompoundFieldOwners returns an empty CompoundFieldOwners.
func NewCompoundFieldOwners() *CompoundFieldOwners {
	return &CompoundFieldOwners{Owners: map[string]string{}}
}
