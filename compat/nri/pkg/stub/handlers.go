package stub

import "github.com/nrikit/nrikit/stub/handler"

// Plugin is what a plugin gives New: any value implementing at least one
// of the event handler interfaces below.
type Plugin interface{}

// The handler interfaces, with upstream's names and methods. They are
// nrikit's (package stub/handler), so a plugin written for upstream's
// stub implements the same events on compat, and one written for
// nrikit's runs here too.
type (
	// ConfigureInterface handles the Configure request.
	ConfigureInterface = handler.ConfigureInterface
	// SynchronizeInterface handles the Synchronize request.
	SynchronizeInterface = handler.SynchronizeInterface
	// ShutdownInterface handles the Shutdown request.
	ShutdownInterface = handler.ShutdownInterface
	// RunPodInterface handles RunPodSandbox events.
	RunPodInterface = handler.RunPodInterface
	// UpdatePodInterface handles UpdatePodSandbox requests.
	UpdatePodInterface = handler.UpdatePodInterface
	// StopPodInterface handles StopPodSandbox events.
	StopPodInterface = handler.StopPodInterface
	// RemovePodInterface handles RemovePodSandbox events.
	RemovePodInterface = handler.RemovePodInterface
	// PostUpdatePodInterface handles PostUpdatePodSandbox events.
	PostUpdatePodInterface = handler.PostUpdatePodInterface
	// CreateContainerInterface handles CreateContainer requests.
	CreateContainerInterface = handler.CreateContainerInterface
	// StartContainerInterface handles StartContainer events.
	StartContainerInterface = handler.StartContainerInterface
	// UpdateContainerInterface handles UpdateContainer requests.
	UpdateContainerInterface = handler.UpdateContainerInterface
	// StopContainerInterface handles StopContainer requests.
	StopContainerInterface = handler.StopContainerInterface
	// RemoveContainerInterface handles RemoveContainer events.
	RemoveContainerInterface = handler.RemoveContainerInterface
	// PostCreateContainerInterface handles PostCreateContainer events.
	PostCreateContainerInterface = handler.PostCreateContainerInterface
	// PostStartContainerInterface handles PostStartContainer events.
	PostStartContainerInterface = handler.PostStartContainerInterface
	// PostUpdateContainerInterface handles PostUpdateContainer events.
	PostUpdateContainerInterface = handler.PostUpdateContainerInterface
	// ValidateContainerAdjustmentInterface handles
	// ValidateContainerAdjustment requests.
	ValidateContainerAdjustmentInterface = handler.ValidateContainerAdjustmentInterface
)
