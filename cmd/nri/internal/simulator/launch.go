package simulator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/internal/trustedfile"
)

// installed is a plugin the simulator put in the runtime's plugin
// directory.
type installed struct {
	full string
	args []string
	line int  // scenario line, 0 for extra plugins
	wasm bool // a WASM module, which the runtime loads in-process
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launcherScript is a plugin-directory entry that starts a plugin in its
// working directory (unless workDir is "").
func launcherScript(workDir, exe string, args []string) string {
	var b strings.Builder
	if workDir == "" {
		b.WriteString("#!/bin/sh\n# Written by the nri simulator: runs a plugin.\n")
	} else {
		b.WriteString("#!/bin/sh\n# Written by the nri simulator: runs a plugin in its working directory.\n")
		fmt.Fprintf(&b, "cd %s || exit 1\n", shellQuote(workDir))
	}
	fmt.Fprintf(&b, "exec %s", shellQuote(exe))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" \"$@\"\n")
	return b.String()
}

// installPlugins fills pluginDir, confDir and a working directory per
// plugin under dataDir with the scenario's plugins and the extra ones.
// Processes are installed as launcher scripts, WASM modules as copies
// (built from their Go package first for wasmPackage): every entry is
// the simulator's own file, which the runtime's file rules accept
// (internal/trustedfile), whoever owns the plugin the user named.
func (s *Simulator) installPlugins(ctx context.Context, pluginDir, confDir, dataDir string) ([]installed, error) {
	extra, err := s.extraPlugins()
	if err != nil {
		return nil, err
	}
	var out []installed
	seen := map[string]bool{}
	for _, p := range s.sc.Plugins {
		full := p.FullName()
		wasm, err := s.installPlugin(ctx, p, filepath.Join(pluginDir, full), filepath.Join(dataDir, full))
		if err != nil {
			return nil, err
		}
		if p.Config != "" {
			if err := os.WriteFile(filepath.Join(confDir, full+".conf"), []byte(p.Config), 0o644); err != nil {
				return nil, fmt.Errorf("configuring plugin %q: %w", full, err)
			}
		}
		seen[full] = true
		out = append(out, installed{full: full, args: p.Args, line: p.Line, wasm: wasm})
	}
	for _, e := range extra {
		path := e.path
		full := filepath.Base(path)
		if seen[full] {
			return nil, fmt.Errorf("plugin %q given twice (%s)", full, path)
		}
		seen[full] = true
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", full, err)
		}
		if err := installFile(abs, filepath.Join(pluginDir, full), e.wasm); err != nil {
			return nil, fmt.Errorf("installing plugin %q: %w", full, err)
		}
		out = append(out, installed{full: full, wasm: e.wasm})
	}
	return out, nil
}

// installPlugin installs the scenario's plugin p as entry of the plugin
// directory, with work as its working directory; it reports whether p
// is a WASM plugin.
func (s *Simulator) installPlugin(ctx context.Context, p *scenario.Plugin, entry, work string) (bool, error) {
	full := p.FullName()
	if p.WASMPackage != "" {
		dir := s.scenarioPath(p.WASMPackage)
		if err := checkPackageDir(dir); err != nil {
			return false, s.sc.Errorf(p.Line, "plugin %q: %v", full, err)
		}
		if err := buildWASM(ctx, s.cfg.logger, full, dir, entry); err != nil {
			return false, fmt.Errorf("%s:%d: plugin %q: %w", s.sc.File, p.Line, full, err)
		}
		return true, nil
	}
	if p.Path != "" {
		path := s.scenarioPath(p.Path)
		wasm, err := pluginFile(path)
		if err != nil {
			return false, s.sc.Errorf(p.Line, "plugin %q: %v", full, err)
		}
		if wasm {
			if len(p.Args) > 0 || len(p.Files) > 0 {
				return false, s.sc.Errorf(p.Line, "plugin %q: %s is a WASM module, which takes no args or files: it runs in the runtime, without a command line or a file system", full, path)
			}
			if err := installFile(path, entry, true); err != nil {
				return false, fmt.Errorf("installing plugin %q: %w", full, err)
			}
			return true, nil
		}
	}
	if err := writeFiles(work, p.Files); err != nil {
		return false, s.sc.Errorf(p.Line, "plugin %q: %v", full, err)
	}
	exe, args, err := s.command(p)
	if err != nil {
		return false, err
	}
	if err := writeEntry(entry, []byte(launcherScript(work, exe, args)), 0o755); err != nil {
		return false, fmt.Errorf("installing plugin %q: %w", full, err)
	}
	return false, nil
}

// installFile installs the plugin file src as the plugin directory's
// entry: a WASM module is copied (mode 0644), an executable gets a
// launcher script that runs it.
func installFile(src, entry string, wasm bool) error {
	if !wasm {
		return writeEntry(entry, []byte(launcherScript("", src, nil)), 0o755)
	}
	in, _, err := trustedfile.OpenRegular(src, adaptation.DefaultMaxWASMModuleSize)
	if err != nil {
		return err
	}
	defer in.Close()
	code, err := trustedfile.ReadAll(in, adaptation.DefaultMaxWASMModuleSize)
	if err != nil {
		return err
	}
	return writeEntry(entry, code, 0o644)
}

// writeEntry writes a new plugin directory entry with mode, whatever the
// umask (the runtime refuses a file its group may write).
func writeEntry(path string, content []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, content, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// scenarioPath resolves a path of the scenario against its directory,
// into an absolute path.
func (s *Simulator) scenarioPath(path string) string {
	if !filepath.IsAbs(path) && s.sc.Dir != "" {
		path = filepath.Join(s.sc.Dir, path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// command returns how the scenario's plugin p is started as a process.
func (s *Simulator) command(p *scenario.Plugin) (string, []string, error) {
	if p.Path != "" {
		exe := s.scenarioPath(p.Path)
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

// extraPlugin is a plugin added with WithExtraPlugin or
// WithExtraPluginDir.
type extraPlugin struct {
	path string
	wasm bool
}

// extraPlugins lists the plugins added with WithExtraPlugin and
// WithExtraPluginDir: executables and WASM modules.
func (s *Simulator) extraPlugins() ([]extraPlugin, error) {
	paths := append([]string(nil), s.cfg.extraPlugins...)
	for _, dir := range s.cfg.extraDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("plugin directory: %w", err)
		}
		for _, e := range entries {
			if _, _, err := api.ParsePluginName(e.Name()); err == nil {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	out := make([]extraPlugin, 0, len(paths))
	for _, p := range paths {
		if _, _, err := api.ParsePluginName(filepath.Base(p)); err != nil {
			return nil, fmt.Errorf("plugin %s: the file must be named IDX-NAME, such as 50-myplugin: %w", p, err)
		}
		wasm, err := pluginFile(p)
		if err != nil {
			return nil, fmt.Errorf("plugin: %w", err)
		}
		out = append(out, extraPlugin{path: p, wasm: wasm})
	}
	return out, nil
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
