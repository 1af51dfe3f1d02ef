package api

import "slices"

// The field table: one row per Field value and one per capability,
// generated from the "nri:" lines of proto/nrikit/nri.proto by
// tools/protoc-gen-nrifields (fields_generated.go, with the owner
// accessors). What repeats per field elsewhere (merge's conflict
// messages, the capability names and their upstream values) is derived
// from it; docs/internals.md ("Adding a field") lists what is still
// written by hand.

// FieldInfo is the row of one Field in the field table.
type FieldInfo struct {
	// Field is the enum value.
	Field Field
	// Path is the field's path in ContainerAdjustment, in proto names
	// ("linux.resources.memory.limit").
	Path string
	// Name is the field's human name in messages ("memory limit").
	Name string
	// Capability is the stable name of the capability that allows
	// setting the field ("linux.resources.memory").
	Capability string
	// Owner says how the field is owned.
	Owner OwnerKind
	// Key names what keys an entry of a field owned per entry
	// ("destination" for mounts); empty otherwise.
	Key string
}

// OwnerKind says how the runtime records who set a field.
type OwnerKind uint8

const (
	// OwnedWhole fields have one owner (FieldOwners.Simple); a second
	// plugin setting one conflicts.
	OwnedWhole OwnerKind = iota
	// OwnedPerEntry fields are owned per entry (FieldOwners.Compound),
	// keyed by FieldInfo.Key.
	OwnedPerEntry
	// OwnedAccumulated fields add up what every plugin sets; their owner
	// is the comma-separated list of plugins (FieldOwners.Simple).
	OwnedAccumulated
)

// CapabilityInfo is one adjustment or update field that a grant allows
// as a whole: a capability, by its stable name.
type CapabilityInfo struct {
	// Name is the stable name ("linux.devices", "update.linux.resources.cpu").
	Name string
	// Path is the field's path in ContainerAdjustment, or in
	// ContainerUpdate for an update.
	Path string
	// Update is set for a field of ContainerUpdate.
	Update bool
	// Upstream is the name of the capability's value in upstream's
	// proposed enum Capability (containerd/nri PR #265), empty if it
	// has none (the fields every runtime applies).
	Upstream string
	// UpstreamValue is that value.
	UpstreamValue uint32
}

// Info returns the row of f, false for None and values this build does
// not know.
func (f Field) Info() (FieldInfo, bool) {
	if f <= 0 || int(f) >= len(fieldTable) {
		return FieldInfo{}, false
	}
	return fieldTable[f], true
}

// HumanName returns f's name in messages ("memory limit", "env"), or its
// enum name if it has none.
func (f Field) HumanName() string {
	if i, ok := f.Info(); ok {
		return i.Name
	}
	return f.String()
}

// FieldTable returns the rows of every Field but None, in enum order.
func FieldTable() []FieldInfo {
	return slices.Clone(fieldTable[1:])
}

// CapabilityTable returns the capabilities that adjustment and update
// fields define, in proto order (adjustments, then updates).
func CapabilityTable() []CapabilityInfo {
	return slices.Clone(capabilityTable[:])
}

// UnownedPaths returns the paths of the adjustment fields that no Field
// owns (device cgroup rules, RDT removal).
func UnownedPaths() []string {
	return slices.Clone(unownedPaths[:])
}
