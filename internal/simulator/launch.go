package simulator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/scenario"
)

// installed is a plugin the simulator put in the runtime's plugin
// directory.
type installed struct {
	full string
	args []string
	line int // scenario line, 0 for extra plugins
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launcherScript is a plugin-directory entry that starts a plugin in its
// working directory.
func launcherScript(workDir, exe string, args []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Written by the nri simulator: runs a plugin in its working directory.\n")
	fmt.Fprintf(&b, "cd %s || exit 1\nexec %s", shellQuote(workDir), shellQuote(exe))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" \"$@\"\n")
	return b.String()
}

// installPlugins fills pluginDir, confDir and a working directory per
// plugin under dataDir with the scenario's plugins and the extra ones.
func (s *Simulator) installPlugins(pluginDir, confDir, dataDir string) ([]installed, error) {
	var out []installed
	seen := map[string]bool{}
	for _, p := range s.sc.Plugins {
		full := p.FullName()
		work := filepath.Join(dataDir, full)
		if err := writeFiles(work, p.Files); err != nil {
			return nil, s.sc.Errorf(p.Line, "plugin %q: %v", full, err)
		}
		exe, args, err := s.command(p)
		if err != nil {
			return nil, err
		}
		script := launcherScript(work, exe, args)
		if err := os.WriteFile(filepath.Join(pluginDir, full), []byte(script), 0o755); err != nil {
			return nil, fmt.Errorf("simulator: installing plugin %q: %w", full, err)
		}
		if p.Config != "" {
			if err := os.WriteFile(filepath.Join(confDir, full+".conf"), []byte(p.Config), 0o644); err != nil {
				return nil, fmt.Errorf("simulator: configuring plugin %q: %w", full, err)
			}
		}
		seen[full] = true
		out = append(out, installed{full: full, args: p.Args, line: p.Line})
	}
	extra, err := s.extraPlugins()
	if err != nil {
		return nil, err
	}
	for _, path := range extra {
		full := filepath.Base(path)
		if seen[full] {
			return nil, fmt.Errorf("simulator: plugin %q given twice (%s)", full, path)
		}
		seen[full] = true
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("simulator: plugin %q: %w", full, err)
		}
		if err := os.Symlink(abs, filepath.Join(pluginDir, full)); err != nil {
			return nil, fmt.Errorf("simulator: installing plugin %q: %w", full, err)
		}
		out = append(out, installed{full: full})
	}
	return out, nil
}

// command returns how the scenario's plugin p is started.
func (s *Simulator) command(p *scenario.Plugin) (string, []string, error) {
	if p.Path != "" {
		exe := p.Path
		if !filepath.IsAbs(exe) && s.sc.Dir != "" {
			exe = filepath.Join(s.sc.Dir, exe)
		}
		if abs, err := filepath.Abs(exe); err == nil {
			exe = abs
		}
		if info, err := os.Stat(exe); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", nil, s.sc.Errorf(p.Line, "plugin %q: %s is not an executable file", p.FullName(), exe)
		}
		return exe, nil, nil
	}
	if s.cfg.launcher == nil {
		return "", nil, s.sc.Errorf(p.Line, "plugin %q: no path, and no sample plugins are available", p.FullName())
	}
	exe, args, ok := s.cfg.launcher(p.Name)
	if !ok {
		return "", nil, s.sc.Errorf(p.Line, "plugin %q: no sample plugin %q (give a path for other plugins)", p.FullName(), p.Name)
	}
	return exe, append(args, "-log-level", s.cfg.pluginLogLevel), nil
}

// extraPlugins lists the plugins added with WithExtraPlugin and
// WithExtraPluginDir.
func (s *Simulator) extraPlugins() ([]string, error) {
	paths := append([]string(nil), s.cfg.extraPlugins...)
	for _, dir := range s.cfg.extraDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("simulator: plugin directory: %w", err)
		}
		for _, e := range entries {
			if _, _, err := api.ParsePluginName(e.Name()); err == nil {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, p := range paths {
		if _, _, err := api.ParsePluginName(filepath.Base(p)); err != nil {
			return nil, fmt.Errorf("simulator: plugin %s: the file must be named IDX-NAME, such as 50-myplugin: %w", p, err)
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("simulator: plugin: %w", err)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("simulator: plugin %s is not an executable file", p)
		}
	}
	return paths, nil
}

// writeFiles creates dir and writes files (relative names) into it.
func writeFiles(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.Clean(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
