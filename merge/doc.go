// Package merge combines the answers of several NRI plugins to one request
// into the single result a runtime applies, detecting conflicts between
// plugins the way containerd/nri does.
//
// The runtime consults plugins in order and feeds each answer to a merger:
// [Create] for CreateContainer, [Update] for UpdateContainer and [Updates]
// for plain lists of container updates (StopContainer answers and the
// like). A merger records, per container and field, which plugin set it
// ([api.OwningPlugins], reported to validating plugins). A plugin touching
// a field or keyed entry (an environment variable, a mount destination,
// ...) that another plugin owns is a conflict, reported as a
// [*ConflictError]. A plugin may take over an entry by first removing it
// (see [api.MarkForRemoval]); OCI hooks accumulate and never conflict.
//
// Apply is atomic: an answer that fails leaves the merger as it was, so
// the caller may carry on without that plugin's answer if its failure
// policy allows. Updates marked IgnoreFailure that conflict are dropped
// individually (see Ignored) without failing the answer.
//
// Mergers are not safe for concurrent use; a runtime handles one request
// at a time per merger. The messages they return are owned by the merger:
// do not modify them. A Create's container view shares what no plugin
// changed with the container given to NewCreate, so that container must
// not be modified either while the Create is in use.
package merge
