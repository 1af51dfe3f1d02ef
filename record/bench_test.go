package record

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// benchCtr is a container as a kubelet's are: a dozen variables, a few
// annotations, mounts.
func benchCtr(i int) (*api.PodSandbox, *api.Container) {
	pod := &api.PodSandbox{Id: fmt.Sprint("pod-", i), Name: fmt.Sprint("p", i), Namespace: "ns", Uid: "uid",
		Labels:      map[string]string{"app": "x", "pod-template-hash": "abc"},
		Annotations: map[string]string{"kubernetes.io/config.seen": "2024-01-01", "kubernetes.io/config.source": "api"}}
	ctr := &api.Container{Id: fmt.Sprint("ctr-", i), PodSandboxId: pod.Id, Name: "c", Args: []string{"/app", "--flag"},
		Annotations: map[string]string{"io.kubernetes.container.hash": "1234", "io.kubernetes.container.restartCount": "0"},
		Mounts:      []*api.Mount{{Destination: "/etc/hosts", Source: "/var/lib/kubelet/pods/x/etc-hosts", Type: "bind", Options: []string{"rbind", "rw"}}}}
	for j := range 12 {
		ctr.Env = append(ctr.Env, fmt.Sprintf("VAR_%d=value-%d", j, j))
	}
	return pod, ctr
}

// BenchmarkRecorderEvent measures what recording one CreateContainer
// request costs the recorder's writer: redaction, encoding, compression.
func BenchmarkRecorderEvent(b *testing.B) {
	red, _ := NewRedactor(testKey(), nil, nil)
	rec, err := NewRecorder(RecorderConfig{Writer: WriterConfig{Path: filepath.Join(b.TempDir(), "rec"), Redactor: red}, QueueSize: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rec.Configure(ctx, "", "rt", "1")
	reqs := make([][2]any, 0, 1024)
	for i := range 1024 {
		p, c := benchCtr(i)
		reqs = append(reqs, [2]any{p, c})
	}
	b.ResetTimer()
	for i := range b.N {
		r := reqs[i%len(reqs)]
		p, c := api.Clone(r[0].(*api.PodSandbox)), api.Clone(r[1].(*api.Container))
		rec.CreateContainer(ctx, p, c)
		if i%4096 == 4095 {
			rec.Flush(ctx)
		}
	}
	rec.Flush(ctx)
	b.StopTimer()
	rec.Close(ctx)
}
