// Command wasmstart measures what loading WASM plugins at Start costs a
// runtime: it installs -n distinct copies of a module (the module with a
// custom section naming the copy, so that each is compiled) into a
// temporary plugin directory, starts an Adaptation on it without a
// compilation cache, and reports how long Start took and the process's
// peak RSS (VmHWM, /proc/self/status):
//
//	go run ./adaptation/testdata/wasmstart -wasm guest.wasm -n 6
//
// With -stop D it calls Stop D into Start instead, and reports how long
// Stop took (the loads in progress must end first). It uses only the
// options every version has, to compare versions.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

func main() {
	wasm := flag.String("wasm", "", "module to install")
	n := flag.Int("n", 6, "number of distinct copies")
	stop := flag.Duration("stop", 0, "call Stop this long into Start (0: after it)")
	flag.Parse()
	if err := run(*wasm, *n, *stop); err != nil {
		fmt.Fprintln(os.Stderr, "wasmstart:", err)
		os.Exit(1)
	}
}

func run(wasm string, n int, stopAfter time.Duration) error {
	code, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wasmstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	plugins, conf := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf")
	for _, d := range []string{plugins, conf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	for i := range n {
		name := filepath.Join(plugins, fmt.Sprintf("%02d-copy", 10+i))
		if err := os.WriteFile(name, withCustomSection(code, fmt.Sprintf("copy %d", i)), 0o644); err != nil {
			return err
		}
	}
	st := runtimetest.NewStore()
	a, err := adaptation.New("wasmstart", "v0", st.List, st.Update,
		adaptation.WithPluginDir(plugins), adaptation.WithConfigDir(conf),
		adaptation.WithDisabledExternalConnections(),
		adaptation.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if stopAfter > 0 {
		started := make(chan error, 1)
		go func() { started <- a.Start(ctx) }()
		time.Sleep(stopAfter)
		stopping := time.Now()
		err := a.Stop(ctx)
		fmt.Printf("%d distinct modules: Stop %v into Start took %v (%v); Start returned %v; peak RSS (VmHWM) %s\n",
			n, stopAfter, time.Since(stopping).Round(10*time.Millisecond), err, <-started, status("VmHWM"))
		return nil
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("%d distinct modules: Start %v, %d plugins active; peak RSS (VmHWM) %s, RSS after %s\n",
		n, took.Round(10*time.Millisecond), len(a.Plugins()), status("VmHWM"), status("VmRSS"))
	return a.Stop(ctx)
}

// withCustomSection returns code with a custom section named
// "wasmstart" holding payload appended.
func withCustomSection(code []byte, payload string) []byte {
	name := "wasmstart"
	body := append(uleb(uint32(len(name))), name...)
	body = append(body, payload...)
	out := append([]byte(nil), code...)
	out = append(out, 0)
	out = append(out, uleb(uint32(len(body)))...)
	return append(out, body...)
}

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// status returns a field of /proc/self/status.
func status(field string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
