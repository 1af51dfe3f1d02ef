// Package pluginconf is the configuration of the benchmark plugins. Both
// runtimes launch pre-installed plugins with nothing but the NRI
// variables in their environment (upstream's) and no arguments, so each
// plugin reads a sidecar file next to its executable: IDX-NAME.bench in
// the plugin directory, which is not executable and therefore skipped by
// plugin discovery. It holds key=value lines:
//
//	env=KEY=VALUE       the environment variable CreateContainer adds
//	namespace=NAME      only containers of pods in namespace NAME
//	pidfile=PATH        where the plugin writes its process ID
//	lifecycle=1         subscribe to the pod and container lifecycle too
//	peakfile=PATH       where the plugin writes its resident memory once
//	                    its Synchronize handler has the whole snapshot
package pluginconf

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Suffix is the file name suffix of a sidecar file.
const Suffix = ".bench"

// Config is one plugin's configuration.
type Config struct {
	// EnvKey and EnvValue are the variable CreateContainer adds.
	EnvKey, EnvValue string
	// Namespace, if set, limits the plugin to pods in this namespace.
	Namespace string
	// PIDFile, if set, is where the plugin writes its PID.
	PIDFile string
	// Lifecycle subscribes the plugin to the lifecycle events of the
	// node's day benchmark (RunPodSandbox, StartContainer,
	// UpdateContainer, StopContainer, RemoveContainer, StopPodSandbox,
	// RemovePodSandbox) besides CreateContainer and PostStartContainer.
	Lifecycle bool
	// PeakFile, if set, is where the plugin writes its resident memory
	// (workload.Memory) when its Synchronize handler runs.
	PeakFile string
}

// Write stores c as the sidecar of the plugin executable at exe.
func Write(exe string, c Config) error {
	var b strings.Builder
	fmt.Fprintf(&b, "env=%s=%s\n", c.EnvKey, c.EnvValue)
	if c.Namespace != "" {
		fmt.Fprintf(&b, "namespace=%s\n", c.Namespace)
	}
	if c.PIDFile != "" {
		fmt.Fprintf(&b, "pidfile=%s\n", c.PIDFile)
	}
	if c.Lifecycle {
		b.WriteString("lifecycle=1\n")
	}
	if c.PeakFile != "" {
		fmt.Fprintf(&b, "peakfile=%s\n", c.PeakFile)
	}
	if err := os.WriteFile(exe+Suffix, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("pluginconf: %w", err)
	}
	return nil
}

// Load reads the sidecar of the running executable (os.Args[0], the path
// the runtime started) and writes the PID file if one is configured.
func Load() (Config, error) {
	var c Config
	f, err := os.Open(os.Args[0] + Suffix)
	if err != nil {
		return c, fmt.Errorf("pluginconf: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch key {
		case "env":
			c.EnvKey, c.EnvValue, _ = strings.Cut(val, "=")
		case "namespace":
			c.Namespace = val
		case "pidfile":
			c.PIDFile = val
		case "lifecycle":
			c.Lifecycle = val == "1"
		case "peakfile":
			c.PeakFile = val
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("pluginconf: %w", err)
	}
	if c.PIDFile != "" {
		if err := os.WriteFile(c.PIDFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return c, fmt.Errorf("pluginconf: %w", err)
		}
	}
	return c, nil
}
