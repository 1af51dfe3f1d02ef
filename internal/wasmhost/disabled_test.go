//go:build nri_no_wasm

package wasmhost

import (
	"context"
	"errors"
	"testing"
)

func TestLoadDisabled(t *testing.T) {
	_, err := Load(context.Background(), "testdata/none.wasm", Options{})
	if !errors.Is(err, ErrDisabled) {
		t.Fatalf("Load = %v, want ErrDisabled", err)
	}
}
