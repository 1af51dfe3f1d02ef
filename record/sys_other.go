//go:build !unix

package record

const noFollow = 0
