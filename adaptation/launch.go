package adaptation

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/socketpair"
)

// launchSpec is a pre-installed plugin found in the plugin directory.
type launchSpec struct {
	idx, name, full string
	path            string
	args            []string
	config          string
}

// discover lists the pre-installed plugins: executables named IDX-NAME in
// the plugin directory. Anything else is skipped with a log line.
func (a *Adaptation) discover() ([]launchSpec, error) {
	dir := a.cfg.pluginDir
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		a.log.Info("no plugin directory, no pre-installed plugins", "dir", dir)
		return nil, nil
	}
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
		case info.Mode()&0o111 == 0:
			a.log.Info("skipping non-executable file in plugin directory", "path", path)
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
		a.log.Info("discovered pre-installed plugin", "plugin", full, "path", path)
		specs = append(specs, launchSpec{idx: idx, name: name, full: full, path: path,
			args: a.cfg.pluginArgs[full], config: config})
	}
	return specs, nil
}

// pluginConfig reads <configdir>/IDX-NAME.conf, else <configdir>/NAME.conf
// ("" if neither exists).
func (a *Adaptation) pluginConfig(idx, name string) (string, error) {
	if a.cfg.configDir == "" {
		return "", nil
	}
	for _, f := range []string{api.FullPluginName(idx, name) + ".conf", name + ".conf"} {
		buf, err := os.ReadFile(filepath.Join(a.cfg.configDir, f))
		if err == nil {
			return string(buf), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", nil
}

// supervise runs a pre-installed plugin: it launches it and reports the
// outcome of the first registration on first; with WithRestartLaunched
// it launches it again, with backoff, each time it exits.
func (a *Adaptation) supervise(l launchSpec, first chan<- error) {
	var (
		rb       = a.cfg.restart
		backoff  time.Duration
		reported bool
	)
	if rb != nil {
		backoff = rb.Initial
	}
	for {
		started := time.Now()
		proc, err := a.runLaunched(l)
		if !reported {
			first <- err
			reported = true
		}
		if rb == nil {
			return
		}
		if proc != nil {
			select {
			case <-proc.reaped:
			case <-a.ctx.Done():
				return
			}
		}
		if time.Since(started) >= rb.Max {
			backoff = rb.Initial
		}
		a.log.Info("restarting pre-installed plugin", "plugin", l.full, "in", backoff)
		if !a.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, rb.Max)
	}
}

// runLaunched starts the plugin's process and registers it; it returns
// once the plugin is synchronized or failed. The process is reaped when
// the plugin is disconnected.
func (a *Adaptation) runLaunched(l launchSpec) (*process, error) {
	proc, conn, err := a.launch(l)
	if err != nil {
		return nil, err
	}
	return proc, a.serveConn(a.ctx, conn, KindPreinstalled, &l, proc)
}

// process is a launched plugin's process.
type process struct {
	a      *Adaptation
	full   string
	cmd    *exec.Cmd
	output []*os.File // read ends of stdout and stderr

	exited chan struct{} // closed once Wait returned
	reaped chan struct{} // closed once terminate finished
	logs   sync.WaitGroup
	once   sync.Once
}

// launch starts the plugin with one end of a socket pair as fd 3.
func (a *Adaptation) launch(l launchSpec) (*process, net.Conn, error) {
	pair, err := socketpair.New()
	if err != nil {
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	defer pair.Close()
	conn, err := pair.LocalConn()
	if err != nil {
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.Close()
		outR.Close()
		outW.Close()
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	cmd := exec.Command(l.path, l.args...)
	cmd.Env = append(append(os.Environ(), a.cfg.env...),
		api.PluginNameEnvVar+"="+l.name,
		api.PluginIdxEnvVar+"="+l.idx,
		api.PluginSocketEnvVar+"="+strconv.Itoa(3),
	)
	cmd.ExtraFiles = []*os.File{pair.PeerFile()}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	pair.ClosePeer()
	if err != nil {
		conn.Close()
		outR.Close()
		errR.Close()
		return nil, nil, fmt.Errorf("launching plugin %q: %w", l.full, err)
	}
	p := &process{a: a, full: l.full, cmd: cmd, output: []*os.File{outR, errR},
		exited: make(chan struct{}), reaped: make(chan struct{})}
	a.log.Info("launched pre-installed plugin", "plugin", l.full, "pid", cmd.Process.Pid)
	p.logs.Add(2)
	a.goOwned(func() { defer p.logs.Done(); p.capture(outR, "stdout") })
	a.goOwned(func() { defer p.logs.Done(); p.capture(errR, "stderr") })
	a.goOwned(func() {
		err := cmd.Wait()
		a.log.Info("pre-installed plugin exited", "plugin", l.full, "pid", cmd.Process.Pid, "status", exitStatus(err))
		close(p.exited)
	})
	return p, conn, nil
}

// pid is the process ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// capture logs the lines the plugin writes to one of its outputs (lines
// longer than the buffer are logged in pieces).
func (p *process) capture(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, _, err := br.ReadLine()
		if len(line) > 0 {
			p.a.log.Info(string(line), "plugin", p.full, "stream", stream)
		}
		if err != nil {
			return
		}
	}
}

// terminate reaps the process of a disconnected plugin: it has the
// termination grace to exit on its own, then it gets SIGTERM, and after
// another grace SIGKILL. Its last output is collected.
func (p *process) terminate() error {
	p.once.Do(func() {
		grace := p.a.cfg.terminationGrace
		if !p.waitExit(grace) {
			p.a.log.Info("disconnected plugin did not exit, terminating it", "plugin", p.full, "grace", grace)
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if !p.waitExit(grace) {
				p.a.log.Warn("plugin did not exit after SIGTERM, killing it", "plugin", p.full, "grace", grace)
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		// The outputs end when the last holder closes them: normally
		// the plugin, at exit; descendants it left behind are cut off.
		logsDone := make(chan struct{})
		go func() { p.logs.Wait(); close(logsDone) }()
		t := time.NewTimer(grace)
		select {
		case <-logsDone:
		case <-t.C:
			for _, f := range p.output {
				f.Close()
			}
			<-logsDone
		}
		t.Stop()
		for _, f := range p.output {
			f.Close()
		}
		close(p.reaped)
	})
	return nil
}

// waitExit waits up to d for the process to exit.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.String()
	}
	return err.Error()
}
