//go:build !scoped

package main

import "github.com/nrikit/nrikit/stub/wasmguest"

func options() []wasmguest.Option { return nil }
