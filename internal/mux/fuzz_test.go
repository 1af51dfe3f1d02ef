package mux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

const (
	fuzzMaxPayload = 64
	fuzzQueueLen   = 4
)

type fuzzOutcome int

const (
	outcomePeerClosed fuzzOutcome = iota
	outcomeTruncated
	outcomeTooLarge
	outcomeOverflow
)

// referenceParse is an independent, simple model of what the mux must do
// with stream when conns 1 and 2 are open and read continuously.
func referenceParse(stream []byte) (conn1, conn2 []byte, outcome fuzzOutcome) {
	pending := map[uint32]int{}
	for {
		if len(stream) == 0 {
			return conn1, conn2, outcomePeerClosed
		}
		if len(stream) < HeaderSize {
			return conn1, conn2, outcomeTruncated
		}
		id := binary.BigEndian.Uint32(stream)
		size := binary.BigEndian.Uint32(stream[4:])
		stream = stream[HeaderSize:]
		if size > fuzzMaxPayload {
			return conn1, conn2, outcomeTooLarge
		}
		if uint32(len(stream)) < size {
			return conn1, conn2, outcomeTruncated
		}
		payload := stream[:size]
		stream = stream[size:]
		switch {
		case size == 0 || id == 0:
		case id == 1:
			conn1 = append(conn1, payload...)
		case id == 2:
			conn2 = append(conn2, payload...)
		default:
			// Frames for IDs that are never opened: at most fuzzQueueLen
			// per ID and MaxPendingConns IDs. (The byte bound,
			// DefaultMaxPendingBytes, is far above
			// MaxPendingConns*fuzzQueueLen*fuzzMaxPayload.)
			if pending[id] == fuzzQueueLen || pending[id] == 0 && len(pending) == MaxPendingConns {
				return conn1, conn2, outcomeOverflow
			}
			pending[id]++
		}
	}
}

func FuzzFrameReader(f *testing.F) {
	if MaxPendingConns*fuzzQueueLen*fuzzMaxPayload > DefaultMaxPendingBytes {
		f.Fatal("referenceParse does not model the pending byte bound")
	}
	f.Add([]byte{})
	f.Add(append(frame(1, []byte("hello")), frame(2, []byte("world"))...))
	f.Add(append(header(1, 0), frame(1, []byte("x"))...))
	f.Add(append(frame(1, []byte("ok")), header(2, 1<<31)...))
	f.Add(append(frame(3, []byte("a")), header(2, 10)...))
	// Frames for one ID more than MaxPendingConns never opened.
	var many []byte
	for id := ConnID(3); id < 3+MaxPendingConns+1; id++ {
		many = append(many, frame(id, []byte("p"))...)
	}
	f.Add(many)

	f.Fuzz(func(t *testing.T, data []byte) {
		gate := make(chan struct{})
		m, err := New(newMemConn(data, gate), WithMaxPayload(fuzzMaxPayload), WithReadQueueLength(fuzzQueueLen))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		c1, err := m.Open(PluginServiceConn)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := m.Open(RuntimeServiceConn)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			data []byte
			err  error
		}
		drain := func(c io.Reader, out chan<- result) {
			var got []byte
			buf := make([]byte, 4*fuzzMaxPayload)
			for {
				n, err := c.Read(buf)
				if n > fuzzMaxPayload {
					// A single Read never spans frames.
					err = errors.New("read returned more than one frame's payload")
				}
				got = append(got, buf[:n]...)
				if err != nil {
					out <- result{got, err}
					return
				}
			}
		}
		r1, r2 := make(chan result, 1), make(chan result, 1)
		go drain(c1, r1)
		go drain(c2, r2)
		close(gate) // start reading only once both conns are open

		var res1, res2 result
		for i, ch := range []chan result{r1, r2} {
			select {
			case r := <-ch:
				if i == 0 {
					res1 = r
				} else {
					res2 = r
				}
			case <-time.After(timeout):
				t.Fatal("mux did not terminate")
			}
		}
		<-m.Done()

		want1, want2, outcome := referenceParse(data)
		if !bytes.Equal(res1.data, want1) || !bytes.Equal(res2.data, want2) {
			t.Fatalf("delivered %q / %q, want %q / %q", res1.data, res2.data, want1, want2)
		}
		merr := m.Err()
		var fe *FrameTooLargeError
		switch outcome {
		case outcomePeerClosed:
			if res1.err != io.EOF || res2.err != io.EOF || !errors.Is(merr, io.EOF) {
				t.Fatalf("clean stream: reads %v / %v, Err %v", res1.err, res2.err, merr)
			}
		case outcomeTruncated:
			if !errors.Is(merr, io.ErrUnexpectedEOF) || !errors.Is(res1.err, io.ErrUnexpectedEOF) {
				t.Fatalf("truncated stream: Err %v, read %v", merr, res1.err)
			}
		case outcomeTooLarge:
			if !errors.As(merr, &fe) || fe.Max != fuzzMaxPayload || fe.Size <= fuzzMaxPayload {
				t.Fatalf("oversize frame: Err %v", merr)
			}
		case outcomeOverflow:
			if merr == nil || errors.As(merr, &fe) || errors.Is(merr, io.EOF) || errors.Is(merr, io.ErrUnexpectedEOF) {
				t.Fatalf("queue overflow: Err %v", merr)
			}
		}
		if outcome != outcomePeerClosed && (res1.err == io.EOF || res2.err == io.EOF) {
			t.Fatalf("failed stream reported as clean EOF: %v / %v", res1.err, res2.err)
		}
	})
}
