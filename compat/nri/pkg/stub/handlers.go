package stub

import nrikit "github.com/nrikit/nrikit/stub"

// Plugin is what a plugin gives New: any value implementing at least one
// of the event handler interfaces below.
type Plugin interface{}

// The handler interfaces, with upstream's names and methods. They are
// nrikit's stub's, so a plugin written for upstream's stub implements
// the same events on compat, and one written for nrikit's runs here too.
type (
	// ConfigureInterface handles the Configure request.
	ConfigureInterface = nrikit.ConfigureInterface
	// SynchronizeInterface handles the Synchronize request.
	SynchronizeInterface = nrikit.SynchronizeInterface
	// ShutdownInterface handles the Shutdown request.
	ShutdownInterface = nrikit.ShutdownInterface
	// RunPodInterface handles RunPodSandbox events.
	RunPodInterface = nrikit.RunPodInterface
	// UpdatePodInterface handles UpdatePodSandbox requests.
	UpdatePodInterface = nrikit.UpdatePodInterface
	// StopPodInterface handles StopPodSandbox events.
	StopPodInterface = nrikit.StopPodInterface
	// RemovePodInterface handles RemovePodSandbox events.
	RemovePodInterface = nrikit.RemovePodInterface
	// PostUpdatePodInterface handles PostUpdatePodSandbox events.
	PostUpdatePodInterface = nrikit.PostUpdatePodInterface
	// CreateContainerInterface handles CreateContainer requests.
	CreateContainerInterface = nrikit.CreateContainerInterface
	// StartContainerInterface handles StartContainer events.
	StartContainerInterface = nrikit.StartContainerInterface
	// UpdateContainerInterface handles UpdateContainer requests.
	UpdateContainerInterface = nrikit.UpdateContainerInterface
	// StopContainerInterface handles StopContainer requests.
	StopContainerInterface = nrikit.StopContainerInterface
	// RemoveContainerInterface handles RemoveContainer events.
	RemoveContainerInterface = nrikit.RemoveContainerInterface
	// PostCreateContainerInterface handles PostCreateContainer events.
	PostCreateContainerInterface = nrikit.PostCreateContainerInterface
	// PostStartContainerInterface handles PostStartContainer events.
	PostStartContainerInterface = nrikit.PostStartContainerInterface
	// PostUpdateContainerInterface handles PostUpdateContainer events.
	PostUpdateContainerInterface = nrikit.PostUpdateContainerInterface
	// ValidateContainerAdjustmentInterface handles
	// ValidateContainerAdjustment requests.
	ValidateContainerAdjustmentInterface = nrikit.ValidateContainerAdjustmentInterface
)
