package workload

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Memory is a process's resident memory, from /proc/PID/status.
type Memory struct {
	// RSSKiB is VmRSS, HWMKiB VmHWM (the peak), in KiB.
	RSSKiB, HWMKiB int64
	// AnonKiB is RssAnon (heap, stacks, the Go runtime's own memory),
	// FileKiB RssFile (the pages of the executable and libraries the
	// process touched: text, read-only data), in KiB. ReadMemory fills
	// them in; String and ParseMemory leave them out.
	AnonKiB, FileKiB int64
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
		case "RssAnon":
			m.AnonKiB = kb
		case "RssFile":
			m.FileKiB = kb
		}
	}
	return m, nil
}

// RecordPeak writes the process's resident memory (Memory.String, VmHWM
// its peak) to path, if path is not "": the benchmark plugins call it
// when their Synchronize handler runs, with the whole snapshot decoded
// (pluginconf's peakfile).
func RecordPeak(path string) error {
	if path == "" {
		return nil
	}
	m, err := ReadMemory(0)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(m.String()+"\n"), 0o600); err != nil {
		return fmt.Errorf("workload: recording peak memory: %w", err)
	}
	return nil
}

// ReadPeak reads what RecordPeak wrote to path.
func ReadPeak(path string) (Memory, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return Memory{}, fmt.Errorf("workload: %w", err)
	}
	return ParseMemory(string(buf))
}

// ResetPeak collects garbage, returns the freed memory to the system and
// resets the process's VmHWM to its VmRSS (clear_refs, see proc(5)): the
// peak read afterwards is that of what follows.
func ResetPeak() error {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("workload: resetting the peak of resident memory: %w", err)
	}
	return nil
}

// ParseMemory reads what Memory.String wrote.
func ParseMemory(s string) (Memory, error) {
	var m Memory
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "VmRSS=%d VmHWM=%d", &m.RSSKiB, &m.HWMKiB); err != nil {
		return m, fmt.Errorf("workload: parsing %q: %w", s, err)
	}
	return m, nil
}

// CPUTime returns the user and system CPU time process pid has used
// (from /proc/PID/stat, in clock ticks of 10 ms).
func CPUTime(pid int) (time.Duration, error) {
	buf, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("workload: %w", err)
	}
	// The command name (field 2) may contain spaces; it ends at the last ')'.
	rest := string(buf)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("workload: short /proc/%d/stat", pid)
	}
	// Fields 14 and 15 (utime, stime) are f[11] and f[12] after the name.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("workload: parsing /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// SelfCPUTime returns the CPU time (user and system) of this process.
func SelfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
