// Package nri is the root package of upstream's module: the client of NRI
// v0.1, which runs each configured plugin as a command per event ("PLUGIN
// invoke", a JSON request on stdin, a JSON result on stdout). It is
// deprecated upstream, where runtimes are told to use the v0.1 adapter
// plugin instead, and kept for the runtimes that still call it
// (containerd when a sandbox is created and deleted). NRI 0.2 and later
// are in pkg/adaptation.
package nri

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	types "github.com/containerd/nri/types/v1"
)

const (
	// DefaultBinaryPath is searched for plugins after PATH.
	DefaultBinaryPath = "/opt/nri/bin"
	// DefaultConfPath is the v0.1 configuration file.
	DefaultConfPath = "/etc/nri/conf.json"
	// Version is the protocol's version.
	Version = "0.1"
)

// Client calls v0.1 plugins.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
type Client struct {
	conf *types.ConfigList
}

// Sandbox identifies the sandbox of a task.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
type Sandbox struct {
	// ID is the sandbox's ID.
	ID string
	// Labels are the sandbox's labels.
	Labels map[string]string
}

// Task is what the client needs of a runtime's task.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
type Task interface {
	// ID is the task's ID.
	ID() string
	// Pid is the task's process ID.
	Pid() uint32
	// Spec returns the task's OCI spec.
	Spec(context.Context) (*oci.Spec, error)
}

// New reads DefaultConfPath; without that file the client has no plugins.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
func New() (*Client, error) {
	conf, err := loadConfig(DefaultConfPath)
	if err != nil {
		return nil, err
	}
	return &Client{conf: conf}, nil
}

// Plugins returns the names of the configured plugins.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
func (c *Client) Plugins() []string {
	names := make([]string, 0, len(c.conf.Plugins))
	for _, p := range c.conf.Plugins {
		names = append(names, p.Type)
	}
	return names
}

// Invoke calls the plugins for task's event state.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
func (c *Client) Invoke(ctx context.Context, task Task, state types.State) ([]*types.Result, error) {
	return c.InvokeWithSandbox(ctx, task, state, nil)
}

// InvokeWithSandbox calls the plugins, in order, for task's event state,
// and returns their results; the first failure ends the calls.
//
// Deprecated: v0.1 plugins should be run through the v0.1 adapter plugin.
func (c *Client) InvokeWithSandbox(ctx context.Context, task Task, state types.State, sandbox *Sandbox) ([]*types.Result, error) {
	if len(c.conf.Plugins) == 0 {
		return nil, nil
	}
	spec, err := task.Spec(ctx)
	if err != nil {
		return nil, fmt.Errorf("nri: reading the task's spec: %w", err)
	}
	rs, err := describeSpec(spec)
	if err != nil {
		return nil, err
	}
	r := &types.Request{Version: c.conf.Version, ID: task.ID(), Pid: int(task.Pid()), State: state, Spec: rs}
	if sandbox != nil {
		r.SandboxID, r.Labels = sandbox.ID, sandbox.Labels
	}
	for _, p := range c.conf.Plugins {
		r.Conf = p.Conf
		res, err := invoke(ctx, p.Type, r)
		if err != nil {
			return nil, fmt.Errorf("plugin: %s: %w", p.Type, err)
		}
		r.Results = append(r.Results, res)
	}
	return r.Results, nil
}

// invoke runs one plugin.
func invoke(ctx context.Context, name string, r *types.Request) (*types.Result, error) {
	in, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	path, err := lookPath(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, "invoke")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	var res types.Result
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		detail := fmt.Sprintf("output %q", out)
		if exit != nil {
			detail += fmt.Sprintf(", exit code %d", exit.ExitCode())
		}
		return nil, fmt.Errorf("decoding the plugin's result (%s): %w", detail, jerr)
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	return &res, nil
}

// lookPath finds a plugin in PATH, then in DefaultBinaryPath (upstream
// appends that directory to the process's PATH; this leaves the
// environment alone).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join(DefaultBinaryPath, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("plugin %q not found in PATH or %s", name, DefaultBinaryPath)
	}
	return p, nil
}

// loadConfig reads the configuration at path; a missing file is an empty
// configuration.
func loadConfig(path string) (*types.ConfigList, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &types.ConfigList{Version: Version}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nri: reading %s: %w", path, err)
	}
	var c types.ConfigList
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("nri: parsing %s: %w", path, err)
	}
	return &c, nil
}

// describeSpec tells a plugin about spec.
func describeSpec(spec *oci.Spec) (*types.Spec, error) {
	s := &types.Spec{Namespaces: map[string]string{}, Annotations: spec.Annotations}
	var res any
	switch {
	case spec.Linux != nil:
		s.CgroupsPath = spec.Linux.CgroupsPath
		for _, ns := range spec.Linux.Namespaces {
			s.Namespaces[string(ns.Type)] = ns.Path
		}
		res = spec.Linux.Resources
	case spec.Windows != nil:
		res = spec.Windows.Resources
	default:
		return s, nil
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("nri: encoding the spec's resources: %w", err)
	}
	s.Resources = data
	return s, nil
}
