//go:build !linux

package cri

import "errors"

// isNamespace cannot tell a namespace outside Linux.
func isNamespace(string) error { return errors.New("network namespaces are Linux's") }
