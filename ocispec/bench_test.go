package ocispec

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func BenchmarkApply(b *testing.B) {
	adj := adjustmentFrom(ToContainer(richSpec(), ContainerMeta{ID: "c"}))
	b.ReportAllocs()
	for b.Loop() {
		if err := Apply(&rspec.Spec{}, adj); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	before, after := richSpec(), richSpec()
	after.Process.Env = append(after.Process.Env, "NEW=1")
	b.ReportAllocs()
	for b.Loop() {
		if len(Diff(before, after)) != 1 {
			b.Fatal("unexpected diff")
		}
	}
}
