// Package legacystub runs nrikit's plugin checker (package conformance,
// `nri check plugin`) on a plugin built on upstream NRI v0.11.0, the NRI
// of containers/nri-plugins v0.14.0 and of CRI-O v1.36, and on the same
// plugin built on v0.10.0: ../legacyplugin, a module of its own. Such a
// plugin answers UNIMPLEMENTED to the RPCs NRI v0.12 added and serves
// those events through StateChange; it must pass every check, launched
// and external, as nri-plugins' memtierd, resctrl-mon and topology-aware
// do (docs/ecosystem.md), which the module proxy does not serve.
package legacystub
