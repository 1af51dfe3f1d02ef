// Package v1 holds the types of NRI v0.1, the protocol of plugins run as
// one command per event with a JSON request on stdin and a JSON result on
// stdout (see the module's root package). It is deprecated upstream and
// kept for the runtimes that still call it.
package v1

import (
	"encoding/json"
	"errors"
)

// Plugin is one configured v0.1 plugin.
type Plugin struct {
	// Type is the plugin's executable, looked up in PATH.
	Type string `json:"type"`
	// Conf is the plugin's own configuration, passed in its request.
	Conf json.RawMessage `json:"conf,omitempty"`
}

// ConfigList is the v0.1 configuration file (/etc/nri/conf.json).
type ConfigList struct {
	// Version is the configuration's version.
	Version string `json:"version"`
	// Plugins are called in this order.
	Plugins []*Plugin `json:"plugins"`
}

// Spec is what a v0.1 plugin is told of the OCI spec.
type Spec struct {
	// Resources is the spec's resources, as JSON.
	Resources json.RawMessage `json:"resources"`
	// Namespaces maps namespace types to paths.
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// CgroupsPath is the spec's cgroups path.
	CgroupsPath string `json:"cgroupsPath,omitempty"`
	// Annotations are the spec's annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// State is the lifecycle event a v0.1 plugin is invoked for.
type State string

// The v0.1 lifecycle events.
const (
	Create State = "create"
	Delete State = "delete"
	Update State = "update"
	Pause  State = "pause"
	Resume State = "resume"
)

// Request is the JSON a v0.1 plugin reads on stdin.
type Request struct {
	// Conf is the plugin's configuration.
	Conf json.RawMessage `json:"conf,omitempty"`
	// Version is the configuration's version.
	Version string `json:"version"`
	// State is the event.
	State State `json:"state"`
	// ID is the task's (container's or sandbox's) ID.
	ID string `json:"id"`
	// SandboxID is the task's sandbox, equal to ID for a sandbox.
	SandboxID string `json:"sandboxID,omitempty"`
	// Pid is the task's process ID (-1 if none).
	Pid int `json:"pid,omitempty"`
	// Spec describes the task's OCI spec.
	Spec *Spec `json:"spec"`
	// Labels are the sandbox's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Results are the results of the plugins called before.
	Results []*Result `json:"results,omitempty"`
}

// IsSandbox reports whether the request is about a sandbox.
func (r *Request) IsSandbox() bool { return r.ID == r.SandboxID }

// NewResult returns an empty result of plugin for r.
func (r *Request) NewResult(plugin string) *Result {
	return &Result{Plugin: plugin, Version: r.Version, Metadata: map[string]string{}}
}

// Result is the JSON a v0.1 plugin writes on stdout.
type Result struct {
	// Plugin is the plugin's name.
	Plugin string `json:"plugin"`
	// Version is the configuration's version.
	Version string `json:"version"`
	// Error is set if the plugin failed.
	Error string `json:"error"`
	// Metadata is what the plugin reports.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Err returns the plugin's failure, or nil.
func (r *Result) Err() error {
	if r.Error == "" {
		return nil
	}
	return errors.New(r.Error)
}
