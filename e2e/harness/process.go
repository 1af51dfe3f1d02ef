package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a program the suite started, typically an external NRI
// plugin, with its stdout and stderr in a log file.
type Process struct {
	// Name names the process in messages.
	Name string
	// LogPath is the file holding its stdout and stderr.
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

// StartProcess starts argv with its output in logPath. It is killed if
// the test binary dies.
func StartProcess(name, logPath string, env []string, argv ...string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Log returns the process's output so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Exited reports whether the process has exited, and its exit code
// (-1 if killed by a signal).
func (p *Process) Exited() (bool, int) {
	select {
	case <-p.exited:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// WaitLog waits until the process's output holds substr at least n
// times; it gives up early if the process exits without it.
func (p *Process) WaitLog(ctx context.Context, timeout time.Duration, substr string, n int) error {
	return Eventually(ctx, timeout, func() error {
		if got := strings.Count(p.Log(), substr); got >= n {
			return nil
		}
		if done, code := p.Exited(); done && strings.Count(p.Log(), substr) < n {
			return Permanent(fmt.Errorf("%s exited (status %d) before logging %q; output:\n%s", p.Name, code, substr, tail(p.Log(), 20)))
		}
		return fmt.Errorf("%s has not logged %q %d times; output:\n%s", p.Name, substr, n, tail(p.Log(), 20))
	})
}

// Stop sends SIGTERM, waits up to 5s, then kills the process.
func (p *Process) Stop() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := p.Wait(5 * time.Second); err == nil {
		return nil
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return errors.New(p.Name + " ignored SIGTERM for 5s: killed")
}
