package api

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// requestTypes are the messages a peer decodes from the wire: every request
// of both services, and the responses a runtime decodes from plugins.
func requestTypes() []proto.Message {
	return []proto.Message{
		&RegisterPluginRequest{}, &UpdateContainersRequest{}, &ConfigureRequest{}, &ConfigureResponse{},
		&SynchronizeRequest{}, &SynchronizeResponse{}, &RunPodSandboxRequest{}, &RunPodSandboxResponse{},
		&UpdatePodSandboxRequest{}, &PostUpdatePodSandboxRequest{}, &StopPodSandboxRequest{},
		&RemovePodSandboxRequest{}, &CreateContainerRequest{}, &CreateContainerResponse{},
		&PostCreateContainerRequest{}, &StartContainerRequest{}, &PostStartContainerRequest{},
		&UpdateContainerRequest{}, &UpdateContainerResponse{}, &PostUpdateContainerRequest{},
		&StopContainerRequest{}, &StopContainerResponse{}, &RemoveContainerRequest{}, &StateChangeEvent{},
		&ValidateContainerAdjustmentRequest{}, &ValidateContainerAdjustmentResponse{}, &Empty{},
	}
}

// FuzzDecodeRequest decodes arbitrary bytes as each wire message type: the
// decoder must never panic, and whatever it accepts must survive a
// marshal/unmarshal round trip unchanged.
func FuzzDecodeRequest(f *testing.F) {
	pod := &PodSandbox{Id: "pod0", Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}}
	ctr := &Container{Id: "ctr0", PodSandboxId: "pod0", Name: "c", Env: []string{"A=B"},
		Mounts: []*Mount{{Destination: "/d", Source: "/s", Options: []string{"ro"}}},
		Linux:  &LinuxContainer{Resources: &LinuxResources{Memory: &LinuxMemory{Limit: &OptionalInt64{Value: 1 << 20}}}}}
	seeds := []proto.Message{
		&CreateContainerRequest{Pod: pod, Container: ctr},
		&ConfigureRequest{RuntimeName: "r", RequestTimeout: 2000, SupportedEvents: int32(AllEvents)},
		&ConfigureResponse{Events: int32(AllEvents), Scope: &PluginScope{Namespaces: []string{"gpu-*"}}},
		&SynchronizeRequest{Pods: []*PodSandbox{pod}, Containers: []*Container{ctr}, More: true},
		&CreateContainerResponse{Adjust: &ContainerAdjustment{Env: []*KeyValue{{Key: "K", Value: "V"}}}},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	types := requestTypes()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		msg := types[int(which)%len(types)].ProtoReflect().New().Interface()
		if err := proto.Unmarshal(data, msg); err != nil {
			return
		}
		again, err := proto.Marshal(msg)
		if err != nil {
			t.Fatalf("%T: re-marshal of accepted input failed: %v", msg, err)
		}
		back := msg.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(again, back); err != nil {
			t.Fatalf("%T: decoding our own encoding failed: %v", msg, err)
		}
		if !proto.Equal(msg, back) {
			t.Fatalf("%T: round trip changed the message", msg)
		}
	})
}
