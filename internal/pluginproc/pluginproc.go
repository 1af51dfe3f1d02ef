// Package pluginproc starts a plugin executable the way an NRI runtime
// starts a pre-installed plugin, and supervises its process: one end of
// a socket pair inherited as file descriptor 3 and the NRI variables in
// its environment (docs/protocol.md, section 1), its output captured and
// forwarded, every wait bounded, the process killed on stop and its exit
// reported.
//
// The runtime (adaptation), the conformance checker and the test
// harnesses all launch plugins with it; where they differ (how output is
// kept, how patiently a process is stopped) is a field of [Spec] or an
// argument of [Process.Stop].
package pluginproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/outputsummary"
	"github.com/nrikit/nrikit/internal/socketpair"
)

// SocketFD is the file descriptor of the plugin's end of the socket
// pair, as NRI_PLUGIN_SOCKET names it.
const SocketFD = 3

// DefaultOutputGrace is how long a process's output is read after it
// exited when Spec.OutputGrace is 0.
const DefaultOutputGrace = 2 * time.Second

// maxLine is the longest line Spec.Lines gets in one piece.
const maxLine = 64 << 10

// Spec says how to start a plugin.
type Spec struct {
	// Path is the executable, Args its arguments.
	Path string
	Args []string
	// Name and Idx, if set, are passed as NRI_PLUGIN_NAME and
	// NRI_PLUGIN_IDX.
	Name, Idx string
	// Env is added to the process's environment, which is this
	// process's (os.Environ), then Env, then the NRI variables.
	Env []string
	// EnvAfter is added after the NRI variables (it can override them).
	EnvAfter []string
	// External leaves out the socket pair: the plugin connects to a
	// runtime's socket on its own, and Start returns no connection.
	External bool
	// Lines, if set, gets the plugin's output line by line, stream
	// "stdout" or "stderr" (a line longer than 64 KiB in pieces). It is
	// called from the goroutines that read the outputs.
	Lines func(stream string, line []byte)
	// Output, if set and Lines is not, gets stdout and stderr as they
	// are written (one writer for both; writes are not concurrent).
	Output io.Writer
	// OutputGrace bounds how long the outputs are read after the process
	// exited (descendants may hold them open); 0 is DefaultOutputGrace.
	OutputGrace time.Duration
	// OnExit, if set, is called once the process has exited, with the
	// result of its Wait (see Status), before its outputs are drained.
	OnExit func(pid int, err error)
	// OnSignal, if set, is called before Stop sends sig because the
	// process did not exit within grace.
	OnSignal func(sig syscall.Signal, grace time.Duration)
	// KeepOutput is how much of the plugin's output Process.Output keeps
	// for failure reasons, the first and last bytes of it (default
	// outputsummary.DefaultSize). The output is kept only if Lines or
	// Output is set: otherwise it is not read at all.
	KeepOutput int
}

// Process is a started plugin process. Its methods are safe for
// concurrent use. It owns a goroutine that waits for the process and one
// per captured output; they end once the process has exited and its
// outputs are drained (Done), which Stop and Kill bring about: whoever
// starts a process stops it.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	// outputs are the read ends of the output pipes.
	outputs []*os.File
	// kept is the beginning and end of the output, for Describe.
	kept    *outputsummary.Buffer
	readers sync.WaitGroup
	outMu   sync.Mutex // serialises writes to spec.Output

	exited chan struct{} // closed once Wait returned
	done   chan struct{} // closed once exited and the outputs are drained
	err    error         // Wait's result, set before exited is closed
}

// Start starts the plugin of s. Unless s.External, it returns the
// runtime's end of the socket pair too, which the caller owns.
func Start(s Spec) (*Process, net.Conn, error) {
	if s.Path == "" {
		return nil, nil, errors.New("pluginproc: no plugin executable given")
	}
	p := &Process{spec: s, cmd: exec.Command(s.Path, s.Args...),
		exited: make(chan struct{}), done: make(chan struct{}), kept: outputsummary.New(s.KeepOutput, nil)}
	env := append(os.Environ(), s.Env...)
	if s.Name != "" {
		env = append(env, api.PluginNameEnvVar+"="+s.Name)
	}
	if s.Idx != "" {
		env = append(env, api.PluginIdxEnvVar+"="+s.Idx)
	}
	var (
		pair *socketpair.Pair
		conn net.Conn
		err  error
	)
	if !s.External {
		if pair, err = socketpair.New(); err != nil {
			return nil, nil, fmt.Errorf("pluginproc: %w", err)
		}
		defer pair.Close()
		if conn, err = pair.LocalConn(); err != nil {
			return nil, nil, fmt.Errorf("pluginproc: %w", err)
		}
		env = append(env, api.PluginSocketEnvVar+"="+strconv.Itoa(SocketFD))
		p.cmd.ExtraFiles = []*os.File{pair.PeerFile()}
	}
	p.cmd.Env = append(env, s.EnvAfter...)
	writeEnds, err := p.pipes()
	if err != nil {
		closeConn(conn)
		return nil, nil, err
	}
	err = p.cmd.Start()
	for _, w := range writeEnds {
		w.Close()
	}
	if pair != nil {
		pair.ClosePeer()
	}
	if err != nil {
		closeConn(conn)
		p.closeOutputs()
		// exec's error names the path again ("fork/exec PATH: ..."):
		// keep its cause only.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	for i, r := range p.outputs {
		stream := "stdout"
		if i == 1 {
			stream = "stderr"
		}
		p.readers.Go(func() { p.read(r, stream) })
	}
	go p.wait()
	return p, conn, nil
}

func closeConn(c net.Conn) {
	if c != nil {
		c.Close()
	}
}

// pipes sets the process's outputs up: a pipe each for stdout and
// stderr if there is a sink for them, else nothing. It returns the
// write ends, which the caller closes once the process started.
func (p *Process) pipes() ([]*os.File, error) {
	if p.spec.Lines == nil && p.spec.Output == nil {
		return nil, nil
	}
	var writeEnds []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range writeEnds {
				f.Close()
			}
			p.closeOutputs()
			return nil, fmt.Errorf("pluginproc: %w", err)
		}
		p.outputs = append(p.outputs, r)
		writeEnds = append(writeEnds, w)
	}
	p.cmd.Stdout, p.cmd.Stderr = writeEnds[0], writeEnds[1]
	return writeEnds, nil
}

// read forwards one output until it ends or is closed.
func (p *Process) read(r io.Reader, stream string) {
	if p.spec.Lines == nil {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				p.outMu.Lock()
				_, _ = p.spec.Output.Write(buf[:n])
				_, _ = p.kept.Write(buf[:n])
				p.outMu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}
	sc := bufio.NewScanner(r)
	// The buffer starts small and grows only for a long line: a quiet
	// plugin's two outputs cost the runtime a few KiB, not 2 × maxLine
	// (which, for 16 plugins, was 2 MiB of live heap and as much again
	// in the garbage collector's goal).
	sc.Buffer(nil, maxLine)
	sc.Split(splitLines)
	for sc.Scan() {
		piece := sc.Bytes()
		line, ended := bytes.CutSuffix(piece, []byte{'\n'})
		if ended {
			line = bytes.TrimSuffix(line, []byte{'\r'})
		}
		if len(line) > 0 {
			_, _ = p.kept.Write(line)
			if ended {
				_, _ = p.kept.Write([]byte{'\n'})
			}
			p.spec.Lines(stream, line)
		}
	}
}

// splitLines is a bufio.SplitFunc for a plugin's output: a line with its
// newline, or a line's first maxLine-1 bytes without one when it is
// longer (the rest follows as further pieces; a Scanner's tokens are
// shorter than its maximum buffer), or what is left at the end. A line is
// thus never an error, however long.
func splitLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if len(data) >= maxLine-1 {
		return maxLine - 1, data[:maxLine-1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// wait reaps the process, then drains its outputs for at most the
// output grace.
func (p *Process) wait() {
	p.err = p.cmd.Wait()
	close(p.exited)
	if p.spec.OnExit != nil {
		p.spec.OnExit(p.Pid(), p.err)
	}
	drained := make(chan struct{})
	go func() { p.readers.Wait(); close(drained) }()
	grace := p.spec.OutputGrace
	if grace <= 0 {
		grace = DefaultOutputGrace
	}
	t := time.NewTimer(grace)
	select {
	case <-drained:
	case <-t.C:
		// Descendants the plugin left behind hold the outputs open:
		// cut them off.
		p.closeOutputs()
		<-drained
	}
	t.Stop()
	p.closeOutputs()
	close(p.done)
}

func (p *Process) closeOutputs() {
	for _, f := range p.outputs {
		f.Close()
	}
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and its outputs are
// drained (or cut off after the output grace).
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Err is the result of the process's Wait (see Status); valid once
// Exited reports true.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// WaitExit waits up to d, or until cancel is closed (may be nil), for
// the process to exit, and reports whether it did.
func (p *Process) WaitExit(d time.Duration, cancel <-chan struct{}) bool {
	if p.Exited() || d <= 0 {
		return p.Exited()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-cancel:
		return p.Exited()
	}
}

// Stop ends the process and returns once Done is closed: it gives the
// process exitGrace to exit on its own, then sends SIGTERM and gives it
// termGrace, then kills it (a zero grace skips the wait, a negative
// termGrace the SIGTERM).
func (p *Process) Stop(exitGrace, termGrace time.Duration) {
	if !p.WaitExit(exitGrace, nil) {
		if termGrace >= 0 {
			p.signal(syscall.SIGTERM, exitGrace)
		}
		if !p.WaitExit(termGrace, nil) {
			p.signal(syscall.SIGKILL, termGrace)
		}
	}
	<-p.done
}

// Kill kills the process if it still runs and waits until Done.
func (p *Process) Kill() { p.Stop(0, -1) }

func (p *Process) signal(sig syscall.Signal, grace time.Duration) {
	if p.Exited() {
		return
	}
	if p.spec.OnSignal != nil {
		p.spec.OnSignal(sig, grace)
	}
	_ = p.cmd.Process.Signal(sig)
}

// Output returns the beginning and the end of what the process wrote to
// its outputs so far, on one line (see outputsummary.Buffer.String); ""
// if its output is not read (Spec.Lines and Spec.Output unset).
func (p *Process) Output() string { return p.kept.String() }

// Describe says how the process ended, for a failure reason: "exited with
// status 0; output: I quit" (see ExitDescription), the output as Output
// returns it, once the outputs are drained (bounded by the output grace).
// The process must have exited.
func (p *Process) Describe() string {
	<-p.done
	d := ExitDescription(p.Err())
	if out := p.Output(); out != "" {
		d += "; output: " + out
	}
	return d
}

// ExitDescription says in words how a process whose Wait returned err
// ended: "exited with status 0", "exited with status 3", "was ended by a
// signal (killed)", or the error of a Wait that failed.
func ExitDescription(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited with status 0"
	case !errors.As(err, &ee):
		return err.Error()
	case ee.ExitCode() >= 0:
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return fmt.Sprintf("was ended by a signal (%s)", strings.TrimPrefix(ee.String(), "signal: "))
}

// Status describes the result of a process's Wait: "exit status 0",
// "exit status 3", "signal: killed", or the error of a Wait that failed.
func Status(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.String()
	}
	return err.Error()
}
