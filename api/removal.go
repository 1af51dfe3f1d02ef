package api

// Removal markers.
//
// A plugin asks for an entry of a keyed field to be removed by sending the
// entry's key prefixed with "-": an annotation or sysctl key, a mount
// destination, an environment variable name, a device path, a namespace
// type or a host network interface name. The runtime removes such entries
// instead of adding them. Removing an entry before setting it also lets a
// plugin take over an entry another plugin already adjusted without that
// counting as a conflict.

// removalPrefix is the marker prepended to a key to request its removal.
const removalPrefix = '-'

// MarkForRemoval returns key marked for removal ("-" + key).
func MarkForRemoval(key string) string {
	return string(removalPrefix) + key
}

// IsMarkedForRemoval reports whether key carries a removal marker and
// returns the key without it. An empty key is never marked.
func IsMarkedForRemoval(key string) (string, bool) {
	if key == "" || key[0] != removalPrefix {
		return key, false
	}
	return key[1:], true
}

// ClearRemovalMarker returns key without a removal marker, if it has one.
func ClearRemovalMarker(key string) string {
	k, _ := IsMarkedForRemoval(key)
	return k
}

// IsMarkedForRemoval reports whether the environment variable is marked
// for removal and returns its name without the marker.
func (e *KeyValue) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(e.GetKey())
}

// IsMarkedForRemoval reports whether the mount is marked for removal and
// returns its destination without the marker.
func (m *Mount) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(m.GetDestination())
}

// IsMarkedForRemoval reports whether the device is marked for removal and
// returns its path without the marker.
func (d *LinuxDevice) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(d.GetPath())
}

// IsMarkedForRemoval reports whether the namespace is marked for removal
// and returns its type without the marker.
func (n *LinuxNamespace) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(n.GetType())
}
