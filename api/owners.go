package api

// Field ownership, as the runtime reports it to validating plugins in
// ValidateContainerAdjustmentRequest.Owners.
//
// OwningPlugins maps a container ID to the FieldOwners of that container.
// FieldOwners.Simple maps a Field (as int32) to the plugin that set it;
// FieldOwners.Compound maps a Field to the owners of its entries, keyed
// like the entries (environment variable name, mount destination, ...).
// An owner is a full plugin name ("10-foo"). An owner marked for removal
// ("-10-foo") is a plugin that removed the field or entry, which then
// may set it again without conflict. OCI hooks, which accumulate, are
// owned by a comma-separated list of plugins ("10-foo,20-bar").
//
// The accessors below are nil-safe: they report false for a nil receiver
// or an unknown container.

// NewOwningPlugins returns an empty ownership record.
func NewOwningPlugins() *OwningPlugins {
	return &OwningPlugins{Owners: make(map[string]*FieldOwners)}
}

// NewFieldOwners returns an empty ownership record for one container.
func NewFieldOwners() *FieldOwners {
	return &FieldOwners{
		Simple:   make(map[int32]string),
		Compound: make(map[int32]*CompoundFieldOwners),
	}
}

// Key returns the field as the key used in FieldOwners' maps.
func (f Field) Key() int32 {
	return int32(f)
}

// SimpleOwner returns the plugin that set the simple field f of container id.
func (o *OwningPlugins) SimpleOwner(id string, f Field) (string, bool) {
	return o.GetOwners()[id].SimpleOwner(f)
}

// CompoundOwner returns the plugin that set the entry key of the compound
// field f of container id.
func (o *OwningPlugins) CompoundOwner(id string, f Field, key string) (string, bool) {
	return o.GetOwners()[id].CompoundOwner(f, key)
}

// CompoundOwners returns the owners of all entries of the compound field f
// of container id, keyed by entry. The map is the record itself; do not
// modify it.
func (o *OwningPlugins) CompoundOwners(id string, f Field) (map[string]string, bool) {
	return o.GetOwners()[id].CompoundOwners(f)
}

// SimpleOwner returns the plugin that set the simple field f.
func (f *FieldOwners) SimpleOwner(field Field) (string, bool) {
	owner, ok := f.GetSimple()[field.Key()]
	return owner, ok
}

// CompoundOwner returns the plugin that set the entry key of the compound
// field f.
func (f *FieldOwners) CompoundOwner(field Field, key string) (string, bool) {
	owner, ok := f.GetCompound()[field.Key()].GetOwners()[key]
	return owner, ok
}

// CompoundOwners returns the owners of all entries of the compound field f,
// keyed by entry.
func (f *FieldOwners) CompoundOwners(field Field) (map[string]string, bool) {
	c, ok := f.GetCompound()[field.Key()]
	if !ok {
		return nil, false
	}
	return c.GetOwners(), true
}

// NamespaceOwners returns the owners of the namespaces of container id,
// keyed by namespace type.
func (o *OwningPlugins) NamespaceOwners(id string) (map[string]string, bool) {
	return o.CompoundOwners(id, Field_Namespace)
}

// The accessors named after upstream's (MemLimitOwner, MountOwner, ...),
// for validators ported from it, are generated with the field table
// (fields_generated.go).
