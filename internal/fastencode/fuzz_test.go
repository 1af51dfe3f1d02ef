package fastencode

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

// FuzzEncode decodes arbitrary bytes as a PodSandbox or a Container with
// proto.Unmarshal (skipping undecodable inputs), encodes the result with
// protobuf-go and fastencode, and requires both encodings to decode to
// proto.Equal messages and SizeX to be exact (see diffEncode).
func FuzzEncode(f *testing.F) {
	add := func(m proto.Message) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return
		}
		_, isPod := m.(*api.PodSandbox)
		f.Add(isPod, b)
	}
	add(fullPod(1))
	add(fullContainer(1))
	add(fullContainer(2))
	add(noNetDevices(fullContainer(1)))
	add(codecfixture.Pod(0))
	add(codecfixture.Container(0, "p"))
	for _, m := range edgeCases() {
		add(m)
	}
	f.Fuzz(func(t *testing.T, isPod bool, data []byte) {
		var m proto.Message = &api.Container{}
		if isPod {
			m = &api.PodSandbox{}
		}
		if proto.Unmarshal(data, m) != nil {
			t.Skip()
		}
		for name, enc := range encoders {
			if d := diffEncode(enc, m, false); d != "" {
				t.Fatal(name + ": " + d)
			}
		}
	})
}
