package ulimitadjuster

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestCreateContainer(t *testing.T) {
	pod := &api.PodSandbox{Annotations: map[string]string{
		Annotation + "/container.c": "- {type: RLIMIT_NOFILE, soft: 1024, hard: 4096}\n- {type: memlock, soft: 1, hard: 2}\n- {type: rlimit_nproc, soft: 3, hard: 3}\n",
	}}
	adj, _, err := New(slog.New(slog.DiscardHandler)).CreateContainer(context.Background(), pod, &api.Container{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	r := adj.GetRlimits()
	if len(r) != 3 || r[0].GetType() != "RLIMIT_NOFILE" || r[0].GetSoft() != 1024 || r[0].GetHard() != 4096 ||
		r[1].GetType() != "RLIMIT_MEMLOCK" || r[2].GetType() != "RLIMIT_NPROC" {
		t.Errorf("rlimits: %v", r)
	}
	adj, _, err = New(slog.New(slog.DiscardHandler)).CreateContainer(context.Background(), pod, &api.Container{Name: "other"})
	if adj != nil || err != nil {
		t.Errorf("other container: %v, %v", adj, err)
	}
}

func TestLimits(t *testing.T) {
	legacy := &api.PodSandbox{Annotations: map[string]string{LegacyAnnotation + "/container.c": "- {type: nofile, soft: 1, hard: 1}"}}
	if l, err := Limits(legacy, "c"); err != nil || len(l) != 1 || l[0].Type != "RLIMIT_NOFILE" {
		t.Errorf("legacy: %v, %v", l, err)
	}
	podWide := &api.PodSandbox{Annotations: map[string]string{Annotation + "/pod": "- {type: core, soft: 0, hard: 0}"}}
	if l, err := Limits(podWide, "any"); err != nil || len(l) != 1 || l[0].Type != "RLIMIT_CORE" {
		t.Errorf("pod-wide: %v, %v", l, err)
	}
	for value, want := range map[string]string{
		"- {type: nofile, soft: 5, hard: 4}": "soft limit 5 exceeds hard limit 4",
		"- {type: files, soft: 1, hard: 1}":  `unknown resource limit type "files"`,
		"- {type: nofile, sfot: 1}":          "sfot",
		"{type: nofile}":                     "annotation ulimits.noderesource.dev",
	} {
		_, err := Limits(&api.PodSandbox{Annotations: map[string]string{Annotation: value}}, "c")
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
