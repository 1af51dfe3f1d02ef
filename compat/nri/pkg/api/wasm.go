package api

import "context"

// Plugin is the service a WASM plugin implements, upstream's name of the
// protocol's Plugin service: the same methods as PluginService (the ttrpc
// service, which a WASM module does not link). A WASM plugin written for
// upstream's module registers it with RegisterPlugin.
type Plugin interface {
	Configure(context.Context, *ConfigureRequest) (*ConfigureResponse, error)
	Synchronize(context.Context, *SynchronizeRequest) (*SynchronizeResponse, error)
	Shutdown(context.Context, *Empty) (*Empty, error)
	RunPodSandbox(context.Context, *RunPodSandboxRequest) (*RunPodSandboxResponse, error)
	UpdatePodSandbox(context.Context, *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error)
	PostUpdatePodSandbox(context.Context, *PostUpdatePodSandboxRequest) (*PostUpdatePodSandboxResponse, error)
	StopPodSandbox(context.Context, *StopPodSandboxRequest) (*StopPodSandboxResponse, error)
	RemovePodSandbox(context.Context, *RemovePodSandboxRequest) (*RemovePodSandboxResponse, error)
	CreateContainer(context.Context, *CreateContainerRequest) (*CreateContainerResponse, error)
	PostCreateContainer(context.Context, *PostCreateContainerRequest) (*PostCreateContainerResponse, error)
	StartContainer(context.Context, *StartContainerRequest) (*StartContainerResponse, error)
	PostStartContainer(context.Context, *PostStartContainerRequest) (*PostStartContainerResponse, error)
	UpdateContainer(context.Context, *UpdateContainerRequest) (*UpdateContainerResponse, error)
	PostUpdateContainer(context.Context, *PostUpdateContainerRequest) (*PostUpdateContainerResponse, error)
	StopContainer(context.Context, *StopContainerRequest) (*StopContainerResponse, error)
	RemoveContainer(context.Context, *RemoveContainerRequest) (*RemoveContainerResponse, error)
	StateChange(context.Context, *StateChangeEvent) (*Empty, error)
	ValidateContainerAdjustment(context.Context, *ValidateContainerAdjustmentRequest) (*ValidateContainerAdjustmentResponse, error)
}

// HostFunctions are the functions a WASM plugin's host provides: Log
// writes to the runtime's log.
type HostFunctions interface {
	Log(context.Context, *LogRequest) (*Empty, error)
}

// PluginPluginAPIVersion is the version of the WASM plugin ABI, which
// nrikit's guest (stub/wasmguest) and host speak; the same as upstream's.
const PluginPluginAPIVersion = 1
