package stub

import (
	"net"
	"testing"
)

func TestMaxProcsFor(t *testing.T) {
	dial := func(string) (net.Conn, error) { return nil, nil }
	noEnv := func(string) string { return "" }
	withEnv := func(k string) string {
		if k == "GOMAXPROCS" {
			return "4"
		}
		return ""
	}
	for _, tc := range []struct {
		name   string
		opts   []Option
		source connSource
		env    func(string) string
		want   int
	}{
		{"launched", nil, inheritedFD, noEnv, DefaultMaxProcs},
		{"external, default dialer", nil, dialSocket, noEnv, DefaultMaxProcs},
		{"external, own dialer", []Option{WithDialer(dial)}, dialSocket, noEnv, 0},
		{"given connection", nil, givenConn, noEnv, 0},
		{"environment wins over the default", nil, inheritedFD, withEnv, 0},
		{"option wins over the environment", []Option{WithMaxProcs(3)}, inheritedFD, withEnv, 3},
		{"option applies to a given connection", []Option{WithMaxProcs(2)}, givenConn, noEnv, 2},
		{"option 0 leaves it alone", []Option{WithMaxProcs(0)}, inheritedFD, noEnv, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			for _, o := range tc.opts {
				if err := o(&cfg); err != nil {
					t.Fatal(err)
				}
			}
			if got := cfg.maxProcsFor(tc.source, tc.env); got != tc.want {
				t.Errorf("maxProcsFor = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestWithMaxProcsRejectsNegative(t *testing.T) {
	cfg := defaultConfig()
	if err := WithMaxProcs(-1)(&cfg); err == nil {
		t.Error("WithMaxProcs(-1) accepted")
	}
}
