package stub_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// benchPluginEnv makes the test binary a plugin process for
// BenchmarkPluginProcess (TestHelperProcess), in mode "default", which
// leaves GOMAXPROCS alone, or "tuned", which calls stub.TuneProcess
// first.
const benchPluginEnv = "NRIKIT_STUB_BENCH_PLUGIN"

// TestHelperProcess is the plugin process of BenchmarkPluginProcess
// (runtimetest.HelperMain); it is skipped in a normal test run.
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{
		"default": func([]string) error { return runBenchPlugin(false) },
		"tuned":   func([]string) error { return runBenchPlugin(true) },
	}
	if !runtimetest.HelperMain(benchPluginEnv, modes) {
		t.Skip("the plugin process of BenchmarkPluginProcess")
	}
}

// runBenchPlugin serves creator until the runtime shuts it down.
func runBenchPlugin(tuned bool) error {
	if tuned {
		stub.TuneProcess()
	}
	s, err := stub.New(&creator{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// stubtest's Shutdown closes the connection right after the answer,
	// so the stub may see the loss first.
	if err := s.Run(ctx); !errors.Is(err, stub.ErrShutdown) && !errors.Is(err, stub.ErrConnectionLost) {
		return fmt.Errorf("Run = %v, want a shutdown", err)
	}
	return nil
}

// benchPluginBin, if set, names a plugin binary that calls
// stub.TuneProcess (such as plugins/template) for BenchmarkPluginProcess
// to run instead of the test binary; "default" then sets GOMAXPROCS to
// the number of CPUs in its environment, which TuneProcess respects.
const benchPluginBin = "NRIKIT_STUB_BENCH_PLUGIN_BIN"

// BenchmarkPluginProcess measures CreateContainer round trips from this
// process's runtime (stubtest) to n plugin processes (the test binary
// re-executed, or $NRIKIT_STUB_BENCH_PLUGIN_BIN), each called in turn as a
// runtime does, with and without stub.TuneProcess in the plugins. It
// reports the time per call and the plugins' peak resident memory (VmHWM).
func BenchmarkPluginProcess(b *testing.B) {
	for _, n := range []int{1, 8} {
		for _, mode := range []string{"default", "tuned"} {
			b.Run(fmt.Sprintf("plugins=%d/%s", n, mode), func(b *testing.B) { benchPlugins(b, n, mode) })
		}
	}
}

func benchPlugins(b *testing.B, n int, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := stubtest.NewRuntime(b)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	plugins := make([]*stubtest.Plugin, n)
	cmds := make([]*exec.Cmd, n)
	for i := range n {
		f, err := rt.ConnectFile()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], append([]string{"-test.count=1"}, runtimetest.HelperArgs(mode)...)...)
		cmd.Env = append(env, benchPluginEnv+"=1", api.PluginSocketEnvVar+"=3",
			api.PluginNameEnvVar+"=bench", fmt.Sprintf("%s=%02d", api.PluginIdxEnvVar, 10+i))
		if bin := os.Getenv(benchPluginBin); bin != "" {
			cmd.Path, cmd.Args = bin, []string{bin}
			if mode == "default" {
				cmd.Env = append(cmd.Env, fmt.Sprintf("GOMAXPROCS=%d", runtime.NumCPU()))
			}
		}
		cmd.ExtraFiles = []*os.File{f}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Start()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		cmds[i] = cmd
		b.Cleanup(func() {
			// A plugin binary may exit 1 on the lost connection (see
			// runBenchPlugin).
			if err := cmd.Wait(); err != nil && os.Getenv(benchPluginBin) == "" {
				b.Errorf("plugin process %d: %v\n%s", i, err, out.String())
			}
		})
		p, err := rt.NextPlugin(ctx)
		if err == nil {
			err = p.WaitRegistered(ctx)
		}
		if err != nil {
			_ = cmd.Process.Kill()
			b.Fatal(err)
		}
		plugins[i] = p
		b.Cleanup(func() { _ = p.Shutdown(ctx) })
	}
	pd, c := pod("p"), ctr("c", "p")
	cpu0 := make([]int64, n)
	for i, cmd := range cmds {
		cpu0[i] = procCPU(b, cmd.Process.Pid)
	}
	for b.Loop() {
		for _, p := range plugins {
			if _, err := p.CreateContainer(ctx, pd, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
	var cpu int64
	for i, cmd := range cmds {
		cpu += procCPU(b, cmd.Process.Pid) - cpu0[i]
	}
	b.ReportMetric(float64(cpu)/float64(b.N*n), "plugin-cpu-ns/call")
	var peak float64
	for _, cmd := range cmds {
		kB, err := procStatusKB(cmd.Process.Pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		peak += float64(kB)
	}
	b.ReportMetric(peak/float64(n), "peak-kB/plugin")
}

// procCPU returns the CPU time, in nanoseconds, the threads of process
// pid have used so far (/proc/PID/task/*/schedstat).
func procCPU(b *testing.B, pid int) int64 {
	b.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatalf("reading the plugin's threads: %v", err)
	}
	var total int64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			b.Fatalf("schedstat of thread %s: %v", t.Name(), err)
		}
		total += ns
	}
	return total
}

// procStatusKB returns a field of /proc/PID/status in kB.
func procStatusKB(pid int, field string) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the plugin's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
