package ocispec

import (
	"bytes"
	"encoding/json"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// cloneSpec deep-copies a test spec through JSON.
func cloneSpec(t *testing.T, s *rspec.Spec) *rspec.Spec {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal spec: %v", err)
	}
	var c rspec.Spec
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("unmarshal spec: %v", err)
	}
	return &c
}

// assertSpec fails the test if got differs from want as an OCI config
// (JSON, where nil and empty lists are the same), listing the differences.
func assertSpec(t *testing.T, got, want *rspec.Spec) {
	t.Helper()
	gj, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	wj, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if bytes.Equal(gj, wj) {
		return
	}
	t.Errorf("spec mismatch; changes from want to got: %v\ngot:  %s\nwant: %s", Diff(want, got), gj, wj)
}
