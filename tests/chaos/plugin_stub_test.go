package chaos

// The plugin side of the suite: the test binary re-executed as a plugin
// process (TestHelperProcess). This file has the entry point and the
// well-behaved, stub-based modes; plugin_raw_test.go the hostile ones.
// Plugins report what they see as lines on stdout ("REGISTER ok",
// "EVENT CreateContainer pod ctr", ...), which the tests wait on.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/log"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(m.Run())
	}
	// ttrpc's errors are collected, and shown for failed tests only.
	log.L.Logger.AddHook(runtimeTTRPC)
	log.L.Logger.SetOutput(io.Discard)
	goleak.VerifyTestMain(m)
}

// TestHelperProcess is not a test: it is the plugin process.
func TestHelperProcess(t *testing.T) {
	modes := map[string]func([]string) error{"stub": runStub, "churn": runChurn, "raw": runRaw, "unopened": runUnopened}
	if !runtimetest.HelperMain(helperEnv, modes) {
		t.Skip("plugin process for the other tests")
	}
}

// say prints one report line on stdout.
func say(format string, args ...any) { runtimetest.Say(format, args...) }

// sayWriter turns what a slog text handler writes into report lines
// ("STUBLOG level=WARN msg=...").
type sayWriter struct{}

func (sayWriter) Write(p []byte) (int, error) {
	say("STUBLOG %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stubLogger reports the stub's warnings and errors.
func stubLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(sayWriter{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// stubPlugin is the well-behaved plugin: it reports Synchronize and
// CreateContainer and adds one environment variable to every container.
type stubPlugin struct {
	env string // KEY=VALUE
}

func (p *stubPlugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	say("SYNC pods=%d containers=%d", len(pods), len(ctrs))
	return nil, nil
}

func (p *stubPlugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	say("EVENT CreateContainer %s %s env=%d", pod.GetId(), ctr.GetId(), len(ctr.GetEnv()))
	adj := &api.ContainerAdjustment{}
	if k, v, ok := strings.Cut(p.env, "="); ok {
		adj.Env = []*api.KeyValue{{Key: k, Value: v}}
	}
	return adj, nil, nil
}

func (p *stubPlugin) Shutdown(context.Context) { say("SHUTDOWN") }

// runStub runs the well-behaved plugin until the runtime disconnects it.
func runStub(args []string) error {
	fs := flag.NewFlagSet("stub", flag.ContinueOnError)
	socket := fs.String("socket", "", "runtime socket")
	name := fs.String("name", "", "plugin name")
	idx := fs.String("idx", "", "plugin index")
	p := &stubPlugin{}
	fs.StringVar(&p.env, "env", "", "KEY=VALUE to add to created containers")
	namespaces := fs.String("namespaces", "", "comma-separated pod namespaces of the plugin's scope (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []stub.Option{stub.WithSocketPath(*socket), stub.WithPluginName(*name), stub.WithPluginIdx(*idx),
		stub.WithLogger(stubLogger())}
	if *namespaces != "" {
		opts = append(opts, stub.WithScope(&api.PluginScope{Namespaces: strings.Split(*namespaces, ",")}))
	}
	st, err := stub.New(p, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := st.Start(ctx); err != nil {
		say("REGISTER error %v", err)
		return err
	}
	say("REGISTER ok")
	err = st.Wait()
	say("STOPPED %v", err)
	return nil
}

// churnPlugin is one connection of the churn mode: it reports when it has
// been synchronized.
type churnPlugin struct {
	synced chan struct{}
	once   sync.Once
}

func (p *churnPlugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	p.once.Do(func() { close(p.synced) })
	return nil, nil
}

func (p *churnPlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// runChurn connects, registers, waits to be synchronized (unless
// -wait-sync=false) and disconnects,
// -count times, -parallel at a time: under the names PREFIX-N, or all
// under the name PREFIX with -same. It reports every failure ("CYCLE n
// error ...") and a summary ("CHURN ok=N failed=M").
func runChurn(args []string) error {
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	socket := fs.String("socket", "", "runtime socket")
	prefix := fs.String("prefix", "churn", "plugin name, or prefix of the names")
	idx := fs.String("idx", "50", "plugin index")
	count := fs.Int("count", 100, "connections")
	parallel := fs.Int("parallel", 1, "connections at a time")
	same := fs.Bool("same", false, "use the same name for every connection")
	linger := fs.Duration("linger", 0, "time to stay connected after being synchronized")
	waitSync := fs.Bool("wait-sync", true, "wait to be synchronized before disconnecting")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var (
		next, ok, failed atomic.Int64
		wg               sync.WaitGroup
	)
	cycle := func(i int) error {
		name := *prefix
		if !*same {
			name = fmt.Sprintf("%s-%d", *prefix, i)
		}
		p := &churnPlugin{synced: make(chan struct{})}
		st, err := stub.New(p, stub.WithSocketPath(*socket), stub.WithPluginName(name), stub.WithPluginIdx(*idx),
			stub.WithLogger(stubLogger()))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Start(ctx); err != nil {
			return err
		}
		defer st.Stop()
		if !*waitSync {
			return nil
		}
		select {
		case <-p.synced:
		case <-ctx.Done():
			return errors.New("not synchronized")
		}
		time.Sleep(*linger)
		return nil
	}
	for range *parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > *count {
					return
				}
				if err := cycle(i); err != nil {
					failed.Add(1)
					say("CYCLE %d error %v", i, err)
				} else {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	say("CHURN ok=%d failed=%d", ok.Load(), failed.Load())
	return nil
}
