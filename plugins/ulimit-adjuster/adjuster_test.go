package ulimitadjuster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

const testConfig = "limits: {nofile: 65536, RLIMIT_MEMLOCK: unlimited, rlimit_nproc: 10}\n"

func configured(t *testing.T, config string, log *bytes.Buffer) *Plugin {
	t.Helper()
	p := New(slog.New(slog.NewTextHandler(log, nil)))
	if _, err := p.Configure(context.Background(), config, "rt", "1"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreateContainer(t *testing.T) {
	pod := &api.PodSandbox{Annotations: map[string]string{
		Annotation + "/container.c": "- {type: RLIMIT_NOFILE, soft: 1024, hard: 4096}\n- {type: memlock, soft: 1, hard: 2}\n- {type: rlimit_nproc, soft: 3, hard: 3}\n",
	}}
	var log bytes.Buffer
	p := configured(t, testConfig, &log)
	adj, _, err := p.CreateContainer(context.Background(), pod, &api.Container{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	r := adj.GetRlimits()
	if len(r) != 3 || r[0].GetType() != "RLIMIT_NOFILE" || r[0].GetSoft() != 1024 || r[0].GetHard() != 4096 ||
		r[1].GetType() != "RLIMIT_MEMLOCK" || r[2].GetType() != "RLIMIT_NPROC" {
		t.Errorf("rlimits: %v", r)
	}
	adj, _, err = p.CreateContainer(context.Background(), pod, &api.Container{Name: "other"})
	if adj != nil || err != nil {
		t.Errorf("other container: %v, %v", adj, err)
	}
}

// TestCaps: a limit is set only if its type has a cap its hard value does
// not exceed; otherwise the creation fails naming the annotation and the
// limit, and a warning names the pod.
func TestCaps(t *testing.T) {
	for name, tc := range map[string]struct{ config, value, want string }{
		"at the cap":            {testConfig, "- {type: nofile, soft: 65536, hard: 65536}", ""},
		"unlimited cap":         {testConfig, "- {type: memlock, soft: 18446744073709551615, hard: 18446744073709551615}", ""},
		"above the cap":         {testConfig, "- {type: nofile, soft: 1024, hard: 65537}", "the hard limit 65537 exceeds the plugin's cap 65536"},
		"not capped":            {testConfig, "- {type: core, soft: 0, hard: 0}", "RLIMIT_CORE is not one of the plugin's limits"},
		"second one refused":    {testConfig, "- {type: nofile, soft: 1, hard: 1}\n- {type: nproc, soft: 1, hard: 11}", "limit 2 \"RLIMIT_NPROC soft=1 hard=11\" refused"},
		"no configuration":      {"", "- {type: nofile, soft: 1024, hard: 1024}", "RLIMIT_NOFILE is not one of the plugin's limits"},
		"no configuration, low": {"", "- {type: core, soft: 0, hard: 0}", "RLIMIT_CORE is not one of the plugin's limits"},
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			pod := &api.PodSandbox{Name: "p", Namespace: "ns", Annotations: map[string]string{Annotation + "/pod": tc.value}}
			adj, _, err := configured(t, tc.config, &log).CreateContainer(context.Background(), pod, &api.Container{Name: "c"})
			if tc.want == "" {
				if err != nil || adj == nil {
					t.Errorf("adjustment %v, error %v", adj, err)
				}
				return
			}
			var r *allow.Refusal
			if adj != nil || !errors.As(err, &r) || !strings.Contains(err.Error(), tc.want) || r.Annotation != Annotation+"/pod" {
				t.Errorf("adjustment %v, error %v: want a refusal of %s with %q", adj, err, Annotation+"/pod", tc.want)
			}
			for _, s := range []string{"level=WARN", "pod=ns/p", "annotation=" + Annotation + "/pod", "value="} {
				if !strings.Contains(log.String(), s) {
					t.Errorf("the warning lacks %q:\n%s", s, log.String())
				}
			}
		})
	}
}

// TestNamespaces: pods outside the configured namespaces are left alone.
func TestNamespaces(t *testing.T) {
	var log bytes.Buffer
	p := configured(t, "namespaces: [ml]\n"+testConfig, &log)
	ask := map[string]string{Annotation: "- {type: nofile, soft: 1, hard: 1}"}
	for ns, want := range map[string]bool{"ml": true, "default": false} {
		adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{Namespace: ns, Annotations: ask}, &api.Container{Name: "c"})
		if err != nil || (adj != nil) != want {
			t.Errorf("namespace %s: %v, %v; want an adjustment: %v", ns, adj, err, want)
		}
	}
}

func TestLimits(t *testing.T) {
	legacy := &api.PodSandbox{Annotations: map[string]string{LegacyAnnotation + "/container.c": "- {type: nofile, soft: 1, hard: 1}"}}
	if key, l, err := Limits(legacy, "c"); err != nil || len(l) != 1 || l[0].Type != "RLIMIT_NOFILE" || key != LegacyAnnotation+"/container.c" {
		t.Errorf("legacy: %s, %v, %v", key, l, err)
	}
	podWide := &api.PodSandbox{Annotations: map[string]string{Annotation + "/pod": "- {type: core, soft: 0, hard: 0}"}}
	if key, l, err := Limits(podWide, "any"); err != nil || len(l) != 1 || l[0].Type != "RLIMIT_CORE" || key != Annotation+"/pod" {
		t.Errorf("pod-wide: %s, %v, %v", key, l, err)
	}
	for value, want := range map[string]string{
		"- {type: nofile, soft: 5, hard: 4}":                   "soft limit 5 exceeds hard limit 4",
		"- {type: files, soft: 1, hard: 1}":                    `unknown resource limit type "files"`,
		"- {type: nofile, sfot: 1}":                            "sfot",
		"{type: nofile}":                                       "annotation ulimits.noderesource.dev",
		strings.Repeat("- {type: core}\n", allow.MaxEntries+1): "more than the 64 allowed",
	} {
		_, _, err := Limits(&api.PodSandbox{Annotations: map[string]string{Annotation: value}}, "c")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", value, err, want)
		}
	}
}

func TestNormalizeType(t *testing.T) {
	for in, want := range map[string]string{"nofile": "RLIMIT_NOFILE", "RLIMIT_AS": "RLIMIT_AS", "rlimit_Stack": "RLIMIT_STACK"} {
		if got, err := NormalizeType(in); err != nil || got != want {
			t.Errorf("NormalizeType(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := NormalizeType("RLIMIT_"); err == nil {
		t.Error("empty type accepted")
	}
}
