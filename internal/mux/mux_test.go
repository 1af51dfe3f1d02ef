package mux

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestOptionsValidation(t *testing.T) {
	a, _ := unixPair(t)
	for _, o := range []Option{
		WithMaxPayload(0), WithMaxPayload(-1), WithMaxPayload(math.MaxInt32 + 1),
		WithReadQueueLength(0), WithReadQueueLength(-5), WithReadQueueLength(1 << 20),
		nil,
	} {
		if m, err := New(a, o); err == nil {
			m.Close()
			t.Errorf("New accepted an invalid option")
		}
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestOpenErrors(t *testing.T) {
	a, _ := unixPair(t)
	m := newMux(t, a)
	if _, err := m.Open(ReservedConn); err == nil {
		t.Error("Open(0) succeeded")
	}
	if _, err := m.Listen(ReservedConn); err == nil {
		t.Error("Listen(0) succeeded")
	}
	c := open(t, m, PluginServiceConn)
	if _, err := m.Open(PluginServiceConn); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Errorf("second Open: %v", err)
	}
	if _, err := m.Listen(PluginServiceConn); err == nil {
		t.Error("Listen on an open conn succeeded")
	}
	c.Close()
	if _, err := m.Open(PluginServiceConn); err == nil {
		t.Error("reopening a closed conn succeeded")
	}
	if m.Err() != nil {
		t.Errorf("Err while running = %v", m.Err())
	}
	if m.Trunk() != a {
		t.Error("Trunk returned another conn")
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if !errors.Is(m.Err(), ErrClosed) || m.Err().Error() != "mux: closed" {
		t.Errorf("Err after Close = %v", m.Err())
	}
	if _, err := m.Open(RuntimeServiceConn); err == nil || !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
}

func TestAddr(t *testing.T) {
	a, _ := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, RuntimeServiceConn)
	if got := c.LocalAddr().Network(); got != "mux" {
		t.Errorf("Network = %q", got)
	}
	if got := c.LocalAddr().String(); !strings.HasPrefix(got, "mux:2") {
		t.Errorf("LocalAddr = %q", got)
	}
	if got := c.RemoteAddr().String(); !strings.HasPrefix(got, "mux:2") {
		t.Errorf("RemoteAddr = %q", got)
	}
}
