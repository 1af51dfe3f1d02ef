package pluginmain

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

func TestScopeFlags(t *testing.T) {
	def := &api.PluginScope{PodLabelSelector: "accel=gpu"}
	for name, tc := range map[string]struct {
		args []string
		want *api.PluginScope
	}{
		"default": {nil, def},
		"replaced": {[]string{"-namespace", "ml", "-namespace=kube-*", "-container", "c*", "-image", "reg/*", "-runtime-handler", "kata", "-cel", "true", "-pod-selector", "x=y"},
			&api.PluginScope{Namespaces: []string{"ml", "kube-*"}, ContainerNames: []string{"c*"}, Images: []string{"reg/*"},
				RuntimeHandlers: []string{"kata"}, Cel: "true", PodLabelSelector: "x=y"}},
		"all": {[]string{"-all"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			var sc scopeFlags
			sc.register(fs, def)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got := sc.scope()
			if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
				t.Errorf("scope = %v, want %v", got, tc.want)
			}
		})
	}
}

func spec(built *bool) Spec {
	return Spec{Name: "test", Summary: "a test plugin", Setup: func(fs *flag.FlagSet) NewFunc {
		fs.String("own", "", "a plugin flag")
		return func(*slog.Logger) (any, []stub.Option, error) {
			*built = true
			return nil, nil, errors.New("not built")
		}
	}}
}

func TestMainUsage(t *testing.T) {
	var built bool
	var stderr bytes.Buffer
	err := Main(context.Background(), spec(&built), []string{"-help"}, &stderr)
	if !errors.Is(err, flag.ErrHelp) || ExitCode(err, &stderr) != 0 {
		t.Errorf("-help: %v", err)
	}
	for _, want := range []string{"test: a test plugin", "-own", "-pod-selector", "-idx", "-log-level"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, args := range [][]string{{"-nope"}, {"extra"}} {
		stderr.Reset()
		err := Main(context.Background(), spec(&built), args, &stderr)
		var usage *UsageError
		if !errors.As(err, &usage) || ExitCode(err, &stderr) != 2 || stderr.Len() == 0 {
			t.Errorf("%v: error %v, output %q", args, err, stderr.String())
		}
	}
	if built {
		t.Error("plugin built despite usage errors")
	}
	stderr.Reset()
	err = Main(context.Background(), spec(&built), []string{"-log-level", "loud"}, &stderr)
	if err == nil || !strings.Contains(err.Error(), `invalid log level "loud"`) {
		t.Errorf("bad level: %v", err)
	}
	err = Main(context.Background(), spec(&built), nil, &stderr)
	if !built || err == nil || !strings.Contains(err.Error(), "test: not built") || ExitCode(err, &stderr) != 1 {
		t.Errorf("build error: %v", err)
	}
}
