// Command measure loads a WASM plugin module N times with
// internal/wasmhost and reports the load times and the process's RSS
// (VmRSS, /proc/self/status) before and after, to measure the cost of a
// loaded plugin:
//
//	go run ./internal/wasmhost/testdata/measure -wasm guest.wasm -n 8 -cache /tmp/cache [-shared]
//
// Run it twice with the same -cache for a cold and a warm load.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

func main() {
	wasm := flag.String("wasm", "", "module to load")
	n := flag.Int("n", 1, "number of copies to load")
	cache := flag.String("cache", "", "compilation cache directory")
	shared := flag.Bool("shared", false, "share one wasmhost.Cache between the copies")
	flag.Parse()
	if err := run(*wasm, *n, *cache, *shared); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

func run(wasm string, n int, cache string, shared bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	cfg, err := proto.Marshal(&api.ConfigureRequest{RuntimeName: "measure"})
	if err != nil {
		return err
	}
	before := settledRSS()
	fmt.Printf("RSS before: %d KiB\n", before)
	var plugins []*wasmhost.Plugin
	defer func() {
		for _, p := range plugins {
			_ = p.Close(ctx)
		}
	}()
	opts := wasmhost.Options{Logger: log, CacheDir: cache}
	if shared {
		c, err := wasmhost.NewCache(cache)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		opts.Cache, opts.CacheDir = c, ""
	}
	for i := range n {
		start := time.Now()
		opts.Name = fmt.Sprintf("%02d-measure", i)
		p, err := wasmhost.Load(ctx, wasm, opts)
		if err != nil {
			return err
		}
		took := time.Since(start)
		plugins = append(plugins, p)
		if _, err := p.Call(ctx, wasmhost.FuncConfigure, cfg); err != nil {
			return err
		}
		fmt.Printf("load %d: %v, RSS %d KiB\n", i+1, took.Round(time.Millisecond), settledRSS())
	}
	after := settledRSS()
	fmt.Printf("RSS after %d plugins: %d KiB, %d KiB per plugin; peak (VmHWM) %d KiB\n", n, after, (after-before)/int64(n), status("VmHWM:"))
	return nil
}

// settledRSS collects garbage and returns VmRSS in KiB.
func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return status("VmRSS:")
}

// status returns the value in KiB of the field key of /proc/self/status.
func status(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), key); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return -1
}
