package fastdecode

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nrikit/nrikit/api"
)

var (
	lpodT = &api.LinuxPodSandbox{}
	lctrT = &api.LinuxContainer{}
	resT  = &api.LinuxResources{}
)

// Building blocks of the linux subtrees: every hand-decoded field and some
// fallback ones (hugepages, devices, blockio class, seccomp profile).
var (
	memFull = cat(byt(1, vint(1, 1<<30)), byt(2, vint(1, 1<<29)), byt(3, vint(1, minus1)), byt(4, vint(1, 7)),
		byt(5, vint(1, 8)), byt(6, vint(1, 60)), byt(7, vint(1, 1)), byt(8, vint(1, 2)))
	cpuFull = cat(byt(1, vint(1, 512)), byt(2, vint(1, 50000)), byt(3, vint(1, 100000)), byt(4, vint(1, minus1)),
		byt(5, vint(1, 9)), str(6, "0-3"), str(7, "0"))
	resFull = cat(byt(1, memFull), byt(2, cpuFull), byt(3, str(1, "2MB"), vint(2, 4)), byt(4, str(1, "gold")),
		entry(6, "memory.high", "1"), entry(6, "io.weight", "50"), byt(7, vint(1, 1), str(2, "c")), byt(8, vint(1, 4096)))
	nsNet        = cat(str(1, "network"), str(2, "/var/run/netns/x"))
	linuxPodFull = cat(byt(1, byt(2, cpuFull)), byt(2, byt(1, memFull)), str(3, "/kubepods"), str(4, "pod.slice"),
		byt(5, nsNet), byt(5, str(1, "ipc")), byt(6, resFull))
	linuxCtrFull = cat(byt(1, str(1, "pid")), byt(1, nsNet), byt(2, str(1, "/dev/fuse"), str(2, "c")), byt(3, resFull),
		byt(4, vint(1, 1000)), str(5, "/kubepods/ctr"), byt(7, vint(1, 1)), entry(9, "net.core.somaxconn", "1024"))
)

// linuxCases are hand-built inputs of the linux subtrees.
func linuxCases() []wireCase {
	bad := "ok\xff\xfe"
	return []wireCase{
		{"full", lpodT, linuxPodFull, false},
		{"full", lctrT, linuxCtrFull, false},
		{"full", resT, resFull, false},
		{"resources twice merges", lctrT, cat(byt(3, byt(1, memFull)), str(5, "a"), byt(3, byt(2, cpuFull), byt(1, byt(1, vint(1, 5))))), false},
		{"namespaces append", lpodT, cat(byt(5, nsNet), byt(5), byt(5, str(2, "p"), str(1, "t"), str(2, "q"))), false},
		{"wrapper value twice, last wins", resT, byt(1, byt(1, vint(1, 1), vint(1, 2))), false},
		{"wrapper unknown fields", resT, byt(2, byt(1, vint(2, 1), vint(1, 3), str(9, "x"))), false},
		{"wrapper value wrong wire type", resT, byt(2, byt(2, fix64(1, 3))), false},
		{"wrapper empty", lctrT, byt(4), false},
		{"wrapper twice merges", lctrT, cat(byt(4, vint(1, 5)), byt(4, vint(7, 1))), false},
		{"bool wrapper large varint", resT, byt(1, byt(7, vint(1, 1<<40))), false},
		{"negative int64", resT, byt(1, byt(3, vint(1, minus1))), false},
		{"uint64 max", resT, byt(2, byt(1, vint(1, maxVarint))), false},
		{"pids wrong wire type", resT, byt(8, str(1, "x")), false},
		{"pids twice merges", resT, cat(byt(8, vint(1, 5)), byt(8, vint(2, 1))), false},
		{"message field as varint", lctrT, cat(vint(3, 1), vint(1, 2)), false},
		{"cgroups path wrong wire type", lctrT, vint(5, 3), false},
		{"unified map entry malformed", resT, byt(6, []byte{0x0a, 0x05, 'a'}), true},
		{"sysctl invalid UTF-8", lctrT, entry(9, "k", bad), true},
		{"cgroups path invalid UTF-8", lctrT, str(5, bad), true},
		{"namespace path invalid UTF-8", lpodT, byt(5, str(2, bad)), true},
		{"cpus invalid UTF-8", resT, byt(2, str(6, bad)), true},
		{"fallback field invalid UTF-8", resT, byt(4, str(1, bad)), true},
		{"truncated wrapper", resT, byt(1, byt(1, []byte{0x08})), true},
		{"truncated memory", resT, byt(1, byt(1, vint(1, 1))[:2]), true},
		{"wrapper field 0", lctrT, byt(4, []byte{0x00, 0x01}), true},
		{"wrapper end group", resT, byt(2, byt(1, tag(2, protowire.EndGroupType))), true},
		{"in a pod", podT, byt(8, linuxPodFull), false},
		{"in a container", ctrT, byt(11, linuxCtrFull), false},
		{"in a container, twice", ctrT, cat(byt(11, linuxCtrFull), str(1, "id"), byt(11, byt(3, byt(8, vint(1, 1))))), false},
		{"in a container, invalid UTF-8 deep", ctrT, byt(11, byt(3, byt(2, str(7, bad)))), true},
	}
}
