package adaptation

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/pluginproc"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// launchSpec is a pre-installed plugin found in the plugin directory.
type launchSpec struct {
	idx, name, full string
	path            string
	args            []string
	config          string
	// wasm is set for a WebAssembly module, loaded in-process.
	wasm bool
	// logs is the budget of the plugin's log records, for all its runs
	// (set by supervise).
	logs *logBudget
}

// discover lists the pre-installed plugins: files named IDX-NAME in the
// plugin directory that are WebAssembly modules or executables, trusted
// (see checkPluginFile). Anything else is skipped with a log line. The
// plugin and configuration directories must be trusted
// (trustedfile.CheckDir): a directory others may write would let them
// add plugins or configurations.
func (a *Adaptation) discover() ([]launchSpec, error) {
	dir := a.cfg.pluginDir
	if dir == "" {
		return nil, nil
	}
	_, err := trustedfile.CheckDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		a.log.Info("no plugin directory, no pre-installed plugins", "dir", dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adaptation: plugin directory refused: %w", err)
	}
	if conf := a.cfg.configDir; conf != "" {
		if _, err := trustedfile.CheckDir(conf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("adaptation: plugin configuration directory refused: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("adaptation: discovering plugins: %w", err)
	}
	var specs []launchSpec
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := os.Stat(path) // follows symbolic links
		switch {
		case err != nil:
			a.log.Warn("skipping plugin file", "path", path, "error", err)
			continue
		case !info.Mode().IsRegular():
			a.log.Info("skipping non-regular file in plugin directory", "path", path)
			continue
		}
		wasm, err := a.checkPluginFile(path)
		switch {
		case trustedfile.IsUntrusted(err):
			a.log.Warn("skipping untrusted file in plugin directory", "path", path, "error", err)
			continue
		case err != nil:
			a.log.Warn("skipping unreadable file in plugin directory", "path", path, "error", err)
			continue
		case !wasm && info.Mode()&0o111 == 0:
			a.log.Info("skipping file in plugin directory: neither executable nor a WebAssembly module", "path", path)
			continue
		}
		idx, name, err := api.ParsePluginName(e.Name())
		if err != nil {
			a.log.Warn("skipping badly named file in plugin directory", "path", path, "error", err)
			continue
		}
		config, err := a.pluginConfig(idx, name)
		if err != nil {
			a.log.Warn("skipping plugin with unreadable configuration", "path", path, "error", err)
			continue
		}
		full := api.FullPluginName(idx, name)
		if wasm && len(a.cfg.pluginArgs[full]) > 0 {
			a.log.Warn("ignoring the arguments given for a WASM plugin", "plugin", full)
		}
		a.log.Info("discovered pre-installed plugin", "plugin", full, "path", path, "wasm", wasm)
		specs = append(specs, launchSpec{idx: idx, name: name, full: full, path: path,
			args: a.cfg.pluginArgs[full], config: config, wasm: wasm})
	}
	return specs, nil
}

// checkPluginFile checks the plugin directory's file at path and reports
// whether it is a WebAssembly module. The file (the one symbolic links
// lead to) must be a regular file owned by root or the effective user
// and not writable by its group or others, and the way to it must be
// one only they can change (trustedfile.CheckPath): an executable is
// exec'ed by its path, so what the path names must not change between
// the check and the exec. A module is read once, through its checked
// descriptor, when it loads (wasmhost.Options.TrustedFile).
func (a *Adaptation) checkPluginFile(path string) (bool, error) {
	real, _, err := trustedfile.CheckPath(path)
	if err != nil {
		return false, err
	}
	return wasmhost.IsModule(real)
}

// pluginConfig reads <configdir>/IDX-NAME.conf, else <configdir>/NAME.conf
// ("" if neither exists): a trusted file (trustedfile.ReadFile) of at
// most the maximum configuration size.
func (a *Adaptation) pluginConfig(idx, name string) (string, error) {
	if a.cfg.configDir == "" {
		return "", nil
	}
	for _, f := range []string{api.FullPluginName(idx, name) + ".conf", name + ".conf"} {
		buf, err := trustedfile.ReadFile(filepath.Join(a.cfg.configDir, f), a.cfg.limits.MaxPluginConfigSize)
		if err == nil {
			return string(buf), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	a.warnConfigWithoutExtension(idx, name)
	return "", nil
}

// warnConfigWithoutExtension logs a configuration file that names the
// plugin idx-name without the extension of its file name (a WASM plugin
// 50-batchenv.wasm reads 50-batchenv.wasm.conf, not 50-batchenv.conf),
// which pluginConfig therefore did not read.
func (a *Adaptation) warnConfigWithoutExtension(idx, name string) {
	ext := filepath.Ext(name)
	if ext == "" || ext == name {
		return
	}
	stem := strings.TrimSuffix(name, ext)
	for _, f := range []string{api.FullPluginName(idx, stem) + ".conf", stem + ".conf"} {
		if _, err := os.Lstat(filepath.Join(a.cfg.configDir, f)); err == nil {
			a.log.Warn("configuration file not read: it names the plugin without the extension of its file name", "plugin",
				api.FullPluginName(idx, name), "file", f, "want", api.FullPluginName(idx, name)+".conf")
			return
		}
	}
}

// process is a launched plugin's process, supervised by pluginproc.
type process struct {
	a      *Adaptation
	full   string
	proc   *pluginproc.Process
	reaped chan struct{} // closed once terminate finished
	once   sync.Once
	logs   *logBudget // of its output
}

// launch starts the plugin with one end of a socket pair as fd 3 and its
// output logged line by line.
func (a *Adaptation) launch(l launchSpec) (*process, net.Conn, error) {
	p := &process{a: a, full: l.full, logs: l.logs, reaped: make(chan struct{})}
	output := l.logs.logger(a.log.Handler())
	proc, conn, err := pluginproc.Start(pluginproc.Spec{
		Path: l.path, Args: l.args, Name: l.name, Idx: l.idx, Env: a.cfg.env,
		Lines: func(stream string, line []byte) {
			output.Log(a.ctx, outputLevel(stream, line), string(line), "plugin", l.full, "stream", stream)
		},
		OutputGrace: a.cfg.limits.TerminationGrace,
		OnExit: func(pid int, err error) {
			a.log.Info("pre-installed plugin exited", "plugin", l.full, "pid", pid, "status", pluginproc.Status(err))
		},
		OnSignal: func(sig syscall.Signal, grace time.Duration) {
			if sig == syscall.SIGTERM {
				a.log.Info("disconnected plugin did not exit, terminating it", "plugin", l.full, "grace", grace)
			} else {
				a.log.Warn("plugin did not exit after SIGTERM, killing it", "plugin", l.full, "grace", grace)
			}
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	p.proc = proc
	a.log.Info("launched pre-installed plugin", "plugin", l.full, "pid", proc.Pid())
	return p, conn, nil
}

// outputLevel is the level a line of a launched plugin's output is logged
// at. Its stdout is informational. What it writes to stderr is a warning
// (a Go panic, an error before it could log, a message before it quits)
// unless it is a log line of its own at debug or info level (slog's and
// logrus's text and JSON formats: level=info, "level":"INFO"), which stays
// informational: a plugin that logs to stderr does not flood the runtime's
// warnings.
func outputLevel(stream string, line []byte) slog.Level {
	if stream != "stderr" {
		return slog.LevelInfo
	}
	for _, prefix := range [][]byte{[]byte("level="), []byte(`"level":"`)} {
		i := bytes.Index(line, prefix)
		if i < 0 {
			continue
		}
		rest := bytes.TrimPrefix(line[i+len(prefix):], []byte(`"`))
		for _, l := range []string{"debug", "info", "trace"} {
			if len(rest) >= len(l) && bytes.EqualFold(rest[:len(l)], []byte(l)) {
				return slog.LevelInfo
			}
		}
		return slog.LevelWarn
	}
	return slog.LevelWarn
}

// pid is the process ID.
func (p *process) pid() int { return p.proc.Pid() }

// terminate reaps the process of a disconnected plugin: it has the
// termination grace to exit on its own, then it gets SIGTERM, and after
// another grace SIGKILL. Its last output is collected (for at most the
// grace again: descendants it left behind are cut off).
func (p *process) terminate() error {
	p.once.Do(func() {
		grace := p.a.cfg.limits.TerminationGrace
		p.proc.Stop(grace, grace)
		p.logs.flush() // its output is drained
		close(p.reaped)
	})
	return nil
}
