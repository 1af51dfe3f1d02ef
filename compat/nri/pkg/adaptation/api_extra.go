package adaptation

import (
	compat "github.com/containerd/nri/pkg/api"
	nrikit "github.com/nrikit/nrikit/api"
)

//go:generate go run ../../internal/genaliases -api ../../../../api -names ../../internal/genaliases/upstream-adaptation-names.txt -out api_aliases.go -pkg adaptation

// Upstream's adaptation package re-exports the protocol's names
// (api_aliases.go); these are the ones it renames or that nrikit's api
// package does not have under upstream's name.
const (
	// ContainerState_CONTAINER_EXITED is upstream's other name of
	// ContainerState_CONTAINER_STOPPED.
	ContainerState_CONTAINER_EXITED = nrikit.ContainerState_CONTAINER_STOPPED //nolint:revive // upstream's name
	// ValidEvents is the mask of every event.
	ValidEvents = nrikit.AllEvents
)

// Upstream's conversions from the OCI runtime spec (see pkg/api).
var (
	FromOCIMounts          = compat.FromOCIMounts
	FromOCIHooks           = compat.FromOCIHooks
	FromOCILinuxNamespaces = compat.FromOCILinuxNamespaces
	FromOCILinuxDevices    = compat.FromOCILinuxDevices
	FromOCILinuxResources  = compat.FromOCILinuxResources
	FromOCILinuxIOPriority = compat.FromOCILinuxIOPriority
)
