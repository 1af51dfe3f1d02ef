package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
)

// checker validates a decoded scenario, resolves its references and fills
// in defaults, collecting errors with lines.
type checker struct {
	s    *Scenario
	root *yaml.Node
	errs []error
	// data is the scenario file's text.
	data []byte
}

// line returns the line of the node at path, or of the closest ancestor
// that exists.
func (c *checker) line(path ...any) int {
	for i := len(path); i >= 0; i-- {
		if n := node(c.root, path[:i]...); n != nil {
			return n.Line
		}
	}
	return 0
}

func (c *checker) errorf(line int, format string, args ...any) {
	c.errs = append(c.errs, c.s.Errorf(line, format, args...))
}

func (c *checker) check() {
	pods := c.checkPods()
	c.checkContainers(pods)
	c.checkKube()
	c.checkPlugins()
	c.checkPolicy()
	c.checkValidator()
	c.checkSteps(pods)
}

func derivedID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return hex.EncodeToString(sum[:])
}

func derivedUID(parts ...string) string {
	h := derivedID(append([]string{"uid"}, parts...)...)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (c *checker) checkPods() map[string]*Pod {
	pods := map[string]*Pod{}
	for i, p := range c.s.Pods {
		if p == nil {
			c.errorf(c.line("pods", i), "empty pod")
			continue
		}
		p.Line = c.line("pods", i)
		if p.Name == "" {
			c.errorf(p.Line, "pod without a name")
			continue
		}
		if strings.Contains(p.Name, "/") {
			c.errorf(c.line("pods", i, "name"), "pod %q: a name cannot contain '/'", p.Name)
		}
		if prev, dup := pods[p.Name]; dup {
			c.errorf(c.line("pods", i, "name"), "pod %q defined twice (first at line %d)", p.Name, prev.Line)
			continue
		}
		if p.Namespace == "" {
			p.Namespace = "default"
		}
		if p.UID == "" {
			p.UID = derivedUID(p.Namespace, p.Name)
		}
		p.ID = derivedID("pod", p.Namespace, p.Name)
		pods[p.Name] = p
	}
	return pods
}

func (c *checker) checkContainers(pods map[string]*Pod) {
	seen := map[string]*Container{}
	for i, ctr := range c.s.Containers {
		if ctr == nil {
			c.errorf(c.line("containers", i), "empty container")
			continue
		}
		ctr.Line = c.line("containers", i)
		if ctr.Name == "" {
			c.errorf(ctr.Line, "container without a name")
			continue
		}
		if strings.Contains(ctr.Name, "/") {
			c.errorf(c.line("containers", i, "name"), "container %q: a name cannot contain '/'", ctr.Name)
		}
		if ctr.Pod == "" {
			c.errorf(ctr.Line, "container %q: no pod", ctr.Name)
			continue
		}
		pod, ok := pods[ctr.Pod]
		if !ok {
			c.errorf(c.line("containers", i, "pod"), "container %q: unknown pod %q", ctr.Name, ctr.Pod)
			continue
		}
		key := ctr.Pod + "/" + ctr.Name
		if prev, dup := seen[key]; dup {
			c.errorf(c.line("containers", i, "name"), "container %q defined twice in pod %q (first at line %d)", ctr.Name, ctr.Pod, prev.Line)
			continue
		}
		seen[key] = ctr
		ctr.ID = derivedID("container", pod.ID, ctr.Name)
		for j, kv := range ctr.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				c.errorf(c.line("containers", i, "env", j), "container %q: environment entry %q is not KEY=VALUE", ctr.Name, kv)
			}
		}
		for j, m := range ctr.Mounts {
			if m == nil || !strings.HasPrefix(m.Destination, "/") {
				c.errorf(c.line("containers", i, "mounts", j), "container %q: a mount needs an absolute destination", ctr.Name)
			}
		}
	}
}

func (c *checker) checkPlugins() {
	seen := map[string]int{}
	for i, p := range c.s.Plugins {
		if p == nil {
			c.errorf(c.line("plugins", i), "empty plugin")
			continue
		}
		p.Line = c.line("plugins", i)
		if err := api.CheckPluginName(p.Name); err != nil {
			c.errorf(c.line("plugins", i, "name"), "plugin %q: %v", p.Name, err)
			continue
		}
		if err := api.CheckPluginIndex(p.Index); err != nil {
			c.errorf(c.line("plugins", i, "index"), "plugin %q: %v (write it quoted, such as \"10\")", p.Name, err)
			continue
		}
		if prev, dup := seen[p.FullName()]; dup {
			c.errorf(p.Line, "plugin %q defined twice (first at line %d)", p.FullName(), prev)
		}
		seen[p.FullName()] = p.Line
		if p.WASMPackage != "" {
			c.checkWASMPackage(p, i)
		}
		for name := range p.Files {
			clean := filepath.Clean(name)
			if name == "" || filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
				c.errorf(c.line("plugins", i, "files"), "plugin %q: file %q must be a relative path inside the plugin's directory", p.FullName(), name)
			}
		}
	}
}

// checkWASMPackage checks a plugin built from a Go package into a WASM
// module: it has no process to pass arguments to, and no working
// directory for files.
func (c *checker) checkWASMPackage(p *Plugin, i int) {
	if p.Path != "" {
		c.errorf(c.line("plugins", i, "wasmPackage"), "plugin %q: give path or wasmPackage, not both", p.FullName())
	}
	for _, key := range []struct {
		name string
		set  bool
	}{{"args", len(p.Args) > 0}, {"files", len(p.Files) > 0}} {
		if key.set {
			c.errorf(c.line("plugins", i, key.name), "plugin %q: a WASM plugin (wasmPackage) takes no %s: it runs in the runtime, without a command line or a file system", p.FullName(), key.name)
		}
	}
}

// resolveContainer finds a container by "name" (unique) or "pod/name".
func (c *checker) resolveContainer(ref string) (*Container, error) {
	podName, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		name, podName = podName, ""
	}
	var found []*Container
	for _, ctr := range c.s.Containers {
		if ctr != nil && ctr.ID != "" && ctr.Name == name && (podName == "" || ctr.Pod == podName) {
			found = append(found, ctr)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("unknown container %q", ref)
	case 1:
		return found[0], nil
	}
	var pods []string
	for _, f := range found {
		pods = append(pods, f.Pod+"/"+name)
	}
	return nil, fmt.Errorf("container %q is ambiguous: write one of %s", ref, strings.Join(pods, ", "))
}

func (c *checker) checkValidator() {
	v := c.s.DefaultValidator
	if v == nil || v.Enable {
		return
	}
	if v.RejectOCIHookAdjustment || v.RejectRuntimeDefaultSeccompAdjustment || v.RejectUnconfinedSeccompAdjustment ||
		v.RejectCustomSeccompAdjustment || v.RejectNamespaceAdjustment || v.RejectSysctlAdjustment || len(v.RequiredPlugins) > 0 {
		c.errorf(c.line("defaultValidator"), "defaultValidator has rules but is not enabled: add enable: true")
	}
}
