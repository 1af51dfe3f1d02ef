// Command benchcompare runs BenchmarkNRI (interop/bench) on two commits
// alternately and prints nrikit's figures before and after, per row of
// docs/benchmarks.md's table; `make bench-compare BASE=<rev>` runs it.
//
// It checks both commits out as git worktrees in a temporary directory
// (removed when it returns), then runs the benchmark -runs times in each,
// alternating (base, head, base, head, ...), so that a change in the
// machine's load affects both alike; each run's table is parsed
// (internal/mdtable) and the runs are reduced to their median and range.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/interop/bench/internal/mdtable"
)

// ldflags are the interop module's (see the top-level Makefile).
const ldflags = "-ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore"

type config struct {
	base, head       string
	runs, rounds     int
	bench, benchtime string
	timeout          time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.base, "base", "", "the commit before (required)")
	flag.StringVar(&c.head, "head", "HEAD", "the commit after")
	flag.IntVar(&c.runs, "runs", 3, "runs of the benchmark per commit, alternating")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds per run (BENCH_ROUNDS; commits before the rounds run one)")
	flag.StringVar(&c.bench, "bench", "^BenchmarkNRI$", "the -bench pattern")
	flag.StringVar(&c.benchtime, "benchtime", "1s", "the -benchtime")
	flag.DurationVar(&c.timeout, "timeout", 4*time.Hour, "bound of the whole comparison")
	flag.Parse()
	if c.base == "" || c.runs < 1 || c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchcompare -base REV [-head REV] [-runs N] [-rounds N] [-bench PATTERN] [-benchtime D]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) (err error) {
	top, err := git(ctx, "", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	var revs [2]string
	for i, rev := range []string{c.base, c.head} {
		if revs[i], err = git(ctx, top, "rev-parse", "--short", rev+"^{commit}"); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "nri-bench-compare")
	if err != nil {
		return fmt.Errorf("creating the worktrees' directory: %w", err)
	}
	var trees [2]string
	defer func() {
		// A bounded context of its own: the worktrees are removed even
		// when ctx was cancelled.
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		for _, wt := range trees {
			if wt != "" {
				if _, rerr := git(cctx, top, "worktree", "remove", "--force", wt); rerr != nil && err == nil {
					err = rerr
				}
			}
		}
		os.RemoveAll(tmp)
		git(cctx, top, "worktree", "prune")
	}()
	for i, name := range []string{"base", "head"} {
		wt := filepath.Join(tmp, name)
		if _, err := git(ctx, top, "worktree", "add", "--detach", wt, revs[i]); err != nil {
			return err
		}
		trees[i] = wt
	}
	var results [2][][]mdtable.Row
	for r := range c.runs {
		for i, wt := range trees {
			fmt.Fprintf(os.Stderr, "benchcompare: run %d of %d, %s (%s)\n", r+1, c.runs, []string{"base", "head"}[i], revs[i])
			rows, err := bench(ctx, c, wt)
			if err != nil {
				return fmt.Errorf("%s: %w", revs[i], err)
			}
			results[i] = append(results[i], rows)
		}
	}
	fmt.Fprintf(out, "\n%d runs per commit, alternating, %d round(s) each; -bench=%q -benchtime=%s\n\n", c.runs, c.rounds, c.bench, c.benchtime)
	mdtable.Print(out, mdtable.Compare(results[0], results[1]), revs[0], revs[1])
	return nil
}

// bench runs the benchmark in worktree wt and parses its table. Its
// output goes to stderr too, as progress.
func bench(ctx context.Context, c config, wt string) ([]mdtable.Row, error) {
	cmd := exec.CommandContext(ctx, "go", "test", ldflags, "-run=^$", "-bench="+c.bench, "-benchmem",
		"-benchtime="+c.benchtime, "-timeout=60m", "./bench/")
	cmd.Dir = filepath.Join(wt, "interop")
	cmd.Env = append(os.Environ(), "BENCH_ROUNDS="+strconv.Itoa(c.rounds))
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench in %s: %w", cmd.Dir, err)
	}
	rows, err := mdtable.Parse(&buf)
	if err == nil && len(rows) == 0 {
		err = errors.New("the benchmark printed no table")
	}
	return rows, err
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
