package workload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory, from /proc/PID/status.
type Memory struct {
	// RSSKiB is VmRSS, HWMKiB VmHWM (the peak), in KiB.
	RSSKiB, HWMKiB int64
}

// String formats m as "VmRSS=N VmHWM=N" (KiB), which ParseMemory reads.
func (m Memory) String() string { return fmt.Sprintf("VmRSS=%d VmHWM=%d", m.RSSKiB, m.HWMKiB) }

// ReadMemory reads the resident memory of process pid ("self" for 0).
func ReadMemory(pid int) (Memory, error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	buf, err := os.ReadFile("/proc/" + who + "/status")
	if err != nil {
		return Memory{}, fmt.Errorf("workload: %w", err)
	}
	var m Memory
	for _, line := range strings.Split(string(buf), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		switch key {
		case "VmRSS":
			m.RSSKiB = kb
		case "VmHWM":
			m.HWMKiB = kb
		}
	}
	return m, nil
}

// ParseMemory reads what Memory.String wrote.
func ParseMemory(s string) (Memory, error) {
	var m Memory
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "VmRSS=%d VmHWM=%d", &m.RSSKiB, &m.HWMKiB); err != nil {
		return m, fmt.Errorf("workload: parsing %q: %w", s, err)
	}
	return m, nil
}
