// Package ocispec applies NRI container adjustments and updates to OCI
// runtime specs, converts specs to the protocol's Container, and diffs two
// specs field by field.
//
// It is the runtime-side counterpart of a plugin's adjustment: a runtime
// collects the merged ContainerAdjustment of all plugins and calls Apply on
// the spec of the container being created; it calls ApplyUpdate with each
// ContainerUpdate it accepts; and it calls ToContainer to describe an
// existing or new container to plugins.
//
// # Semantics
//
// Apply follows the generator containerd and CRI-O use with containerd/nri
// v0.12.5, field by field:
//
//   - Annotations, sysctls and net devices are maps; a key carrying a
//     removal marker ("-KEY", see api.MarkForRemoval) deletes the entry.
//     Removals are applied before additions, so "-k" and "k" together
//     replace the entry.
//   - Environment variables replace existing ones in place and append new
//     ones in the order of the adjustment; "-NAME" removes the variable.
//     When the adjustment names a variable more than once the last entry
//     wins; when the spec holds a variable more than once, the first
//     occurrence is replaced and later ones are dropped.
//   - Mounts are replaced by destination, "-/dest" removes one; after any
//     mount adjustment the spec's mounts are sorted parents first (by path
//     depth, then destination), as upstream does. An rshared or rslave
//     mount makes the root propagation rshared or rslave (the latter unless
//     it already is rshared); WithPropagationChecker(CheckHostPropagation)
//     verifies, as upstream does, that the host side supports it.
//   - Devices are replaced by path, "-/dev/x" removes one. Each added device
//     also gets a device cgroup allow rule ("rw", "rwm" for block devices).
//     Unlike upstream, a "u" device gets a "c" rule and a "p" (FIFO) device
//     gets none, since the device cgroup knows only a, b and c. Removing a
//     device leaves existing cgroup rules alone, as upstream does.
//   - Namespaces are replaced by type, "-type" removes one.
//   - Hooks of all six kinds are appended. Args replace the process
//     arguments when non-empty. Rlimits replace the limit of the same type
//     or are appended (upstream appends duplicates, which the OCI spec
//     forbids).
//   - Resources: every field present in the adjustment is set. As upstream,
//     setting the memory limit also sets the swap limit to the same value
//     (no swap) unless the adjustment sets swap itself. Huge page limits
//     replace the limit of the same page size. Device cgroup rules are
//     appended. A pids limit below zero (api's "unlimited", -1) clears the
//     limit; upstream leaves it unchanged.
//   - Block I/O and RDT classes are resolved by the runtime's callbacks
//     (WithBlockIOClassResolver, WithRDTClassResolver); an empty class name
//     clears the setting. Without a resolver a class is ignored, as
//     upstream does. The LinuxRdt adjustment is applied after the RDT class:
//     remove clears linux.intelRdt, then CLOS ID, schemata and monitoring
//     are set.
//   - CDI devices cannot be expressed in an OCI spec. With
//     WithCDIDeviceInjector they are handed to the runtime's injector, as
//     upstream's generator does. Without one, Apply records the
//     fully-qualified names in the annotation CDIAnnotationKey (a
//     comma-separated list, the format of CDI's "cdi.k8s.io/" annotations),
//     so that they are not lost; ToContainer reads them back.
//   - Seccomp policy, scheduler, I/O priority, memory policy, OOM score
//     adjustment and cgroups path replace the spec's value. A scheduler
//     with policy SCHED_NONE and an I/O priority with class
//     IOPRIO_CLASS_NONE clear the setting.
//
// Diff compares two specs field by field, for showing what the plugins
// changed; Fields flattens an NRI message (such as an adjustment) into the
// same dotted paths, and DiffFields compares two such flattenings, so a
// plugin's answer and the spec it changed read alike.
//
// Apply validates the whole adjustment (and resolves classes) before it
// changes the spec, so invalid input leaves the spec untouched; only the
// CDI injector and the resource checker run while the spec is being
// changed. Errors are *FieldError values naming the offending field;
// validation failures also match ErrInvalid with errors.Is.
package ocispec
