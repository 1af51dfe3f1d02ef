package merge

import (
	"github.com/nrikit/nrikit/api"
)

// resourceField is one simple (single-owner) field of LinuxResources, a
// row of resourceFields (generated from the proto: fields_generated.go).
type resourceField struct {
	field api.Field
	isSet func(src *api.LinuxResources) bool
	copy  func(dst, src *api.LinuxResources)
}

// mergeResources merges a plugin's resource changes for container id into
// each of dsts (allocating accessors, evaluated at commit). Simple fields
// have one owner each; hugepage limits are owned per page size and
// unified cgroup entries per key. Device cgroup rules carry no ownership
// and are merged only if withDevices is set (upstream ignores them in
// updates).
func mergeResources(tx *txn, id, plugin string, src *api.LinuxResources, withDevices bool, dsts ...func() *api.LinuxResources) error {
	if src == nil {
		return nil
	}
	for _, f := range resourceFields {
		if !f.isSet(src) {
			continue
		}
		if err := tx.claim(simpleKey(id, f.field), plugin); err != nil {
			return err
		}
		tx.then(func() {
			for _, dst := range dsts {
				f.copy(dst(), src)
			}
		})
	}
	for _, l := range src.HugepageLimits {
		if l == nil {
			continue
		}
		if err := tx.claim(entryKey(id, api.Field_HugepageLimits, l.PageSize), plugin); err != nil {
			return err
		}
		tx.then(func() {
			for _, dst := range dsts {
				d := dst()
				d.HugepageLimits = append(d.HugepageLimits, api.Clone(l))
			}
		})
	}
	if withDevices && len(src.Devices) > 0 {
		tx.then(func() {
			for _, dst := range dsts {
				d := dst()
				for _, dev := range src.Devices {
					if dev != nil {
						d.Devices = append(d.Devices, api.Clone(dev))
					}
				}
			}
		})
	}
	for _, k := range sortedKeys(src.Unified) {
		if err := tx.claim(entryKey(id, api.Field_CgroupsUnified, k), plugin); err != nil {
			return err
		}
		v := src.Unified[k]
		tx.then(func() {
			for _, dst := range dsts {
				ensureMap(&dst().Unified)[k] = v
			}
		})
	}
	return nil
}
