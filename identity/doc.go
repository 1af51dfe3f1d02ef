// Package identity says who an NRI plugin is, as the runtime can prove
// it, never as the plugin says: the name a plugin registers with is a
// claim, its identity is what the runtime observes.
//
// A launched plugin (a pre-installed process or WASM module of the
// runtime's plugin directory, or a builtin one) is who its file in the
// trusted directory, or its registration in the runtime, says
// ([Launched]). An external plugin, a process that connected to the
// runtime's socket, is identified as SPIFFE's workload attestation
// identifies a workload, from what the node observes about the calling
// process:
//
//   - its credentials, from the connection ([Capture]): SO_PEERCRED's
//     uid, gid and pid, and a pidfd of the process that connected
//     (SO_PEERPIDFD, Linux 6.5), so that a PID reused after the peer
//     exited cannot stand in for it (older kernels: pidfd_open at
//     accept, or nothing; [Process.Pinning] says which);
//   - its executable ([Peer.Inspect]): the path as the process sees it
//     and the SHA-256 of the file it runs, opened through /proc/PID and
//     read with bounds (size, deadline, no FUSE);
//   - its cgroup, and through it and the runtime's own list of pods and
//     containers ([Locate]), the pod and container it runs in: namespace,
//     pod name and labels, container name and ID, image where the runtime
//     knows it. The container's cgroup is the one its OCI cgroupsPath
//     names (cgroupfs and systemd layouts, cgroup v2 and v1), so that
//     containerd and CRI-O need give nothing beyond what NRI already
//     carries. A process in no container is identified by its uid and
//     executable.
//
// An [Identity] is computed once per connection, when the plugin
// registers, and is immutable afterwards. Its String is one line for
// logs. What an identity proves, and what it cannot (root on the node,
// a process that hands its connection to another), is the threat model
// of docs/policy.md.
package identity
