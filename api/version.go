package api

// NRIVersion is the NRI release whose protocol nrikit speaks (containerd/nri
// v0.12.5): the runtime library sends it to plugins in
// ConfigureRequest.NRI_version, the stub in RegisterPluginRequest, and the
// conformance checker and the stub's test runtime present it as theirs.
const NRIVersion = "v0.12.5"
