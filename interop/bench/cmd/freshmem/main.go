// Command freshmem measures what this machine charges a process for
// reading a large message from a unix socket into memory it has not
// touched before, as a plugin receiving a Synchronize of many containers
// does: a child process (GOMAXPROCS=1, as a plugin's) reads -mb MiB in
// 4 MiB frames, once into one reused buffer and once into a fresh buffer
// per frame that it keeps, and prints the wall and CPU time of each. The
// difference is the cost of first touching the pages (see
// docs/benchmarks.md, "Issue 27 at its close").
//
//	go run ./bench/cmd/freshmem -mb 155
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// frameSize is the multiplexer's largest frame that a Synchronize part
// fills.
const frameSize = 4 << 20

func main() {
	if len(os.Args) == 4 && os.Args[1] == "-reader" {
		if err := read(os.Args[2] == "fresh", os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "freshmem reader:", err)
			os.Exit(1)
		}
		return
	}
	mb := flag.Int("mb", 155, "MiB to send (a Synchronize of 100,000 containers is about 155)")
	flag.Parse()
	if *mb < 4 || *mb > 16<<10 {
		fmt.Fprintln(os.Stderr, "freshmem: -mb must be within [4, 16384]")
		os.Exit(2)
	}
	for _, mode := range []string{"reused", "fresh"} {
		if err := send(mode, *mb<<20); err != nil {
			fmt.Fprintln(os.Stderr, "freshmem:", err)
			os.Exit(1)
		}
	}
}

// send starts a reader child in mode and writes total bytes to it over a
// socket pair.
func send(mode string, total int) error {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket pair: %w", err)
	}
	w, r := os.NewFile(uintptr(fds[0]), "writer"), os.NewFile(uintptr(fds[1]), "reader")
	defer w.Close()
	cmd := exec.Command(os.Args[0], "-reader", mode, strconv.Itoa(total))
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Start()
	r.Close()
	if err != nil {
		return fmt.Errorf("starting the reader: %w", err)
	}
	buf := make([]byte, frameSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	for sent := 0; sent < total; sent += frameSize {
		if _, err := w.Write(buf[:min(frameSize, total-sent)]); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("writing to the reader: %w", err)
		}
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("reader (%s): %w", mode, err)
	}
	return nil
}

// read reads the given number of bytes from descriptor 3 in frames, into
// fresh kept buffers or one reused buffer, and prints its times.
func read(fresh bool, totalArg string) error {
	total, err := strconv.Atoi(totalArg)
	if err != nil {
		return fmt.Errorf("byte count %q: %w", totalArg, err)
	}
	f := os.NewFile(3, "socket")
	if f == nil {
		return errors.New("no socket on descriptor 3")
	}
	buf := make([]byte, frameSize)
	var kept [][]byte
	start := time.Now()
	for got := 0; got < total; got += frameSize {
		if fresh {
			buf = make([]byte, frameSize)
			kept = append(kept, buf) // kept, as a decoded snapshot is
		}
		if _, err := io.ReadFull(f, buf[:min(frameSize, total-got)]); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
	}
	wall := time.Since(start)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	user, sys := time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
	mode := "into one reused buffer"
	if fresh {
		mode = fmt.Sprintf("into %d fresh buffers, kept", len(kept))
	}
	fmt.Printf("%d MiB %s: %v wall, CPU %v (user %v, system %v), %d page faults\n", total>>20, mode,
		wall.Round(time.Millisecond), (user + sys).Round(time.Millisecond), user.Round(time.Millisecond),
		sys.Round(time.Millisecond), ru.Minflt)
	return nil
}
