package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxCRIMessage bounds a CRI answer the checker reads (the kubelet's
// default is 16 MiB).
const maxCRIMessage = 16 << 20

// criClient is the checker's CRI connection to the runtime.
type criClient struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
}

// dialCRI connects to the runtime's CRI socket. The connection is made
// lazily by gRPC; version checks that it answers.
func dialCRI(path string) (*criClient, error) {
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxCRIMessage)),
	)
	if err != nil {
		return nil, fmt.Errorf("CRI socket %s: %w", path, err)
	}
	return &criClient{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn)}, nil
}

func (c *criClient) close() { _ = c.conn.Close() }

// version returns the runtime's name and version as CRI reports them.
func (c *criClient) version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI Version: %w", err)
	}
	return v, nil
}

// imagePresent reports whether the image is in the runtime's image store.
// The checker never pulls.
func (c *criClient) imagePresent(ctx context.Context, image string) (bool, error) {
	st, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return false, fmt.Errorf("CRI ImageStatus %s: %w", image, err)
	}
	return st.GetImage() != nil, nil
}

// podState returns the pod's CRI state, or notFound when the runtime
// does not know it.
func (c *criClient) podStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return st.GetStatus(), nil
}

// listPods returns the pods carrying every label of selector.
func (c *criClient) listPods(ctx context.Context, selector map[string]string) ([]*runtimeapi.PodSandbox, error) {
	l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: selector}})
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	return l.GetItems(), nil
}

// listContainers returns the containers of the pod podID (all pods if
// empty) that carry every label of selector.
func (c *criClient) listContainers(ctx context.Context, podID string, selector map[string]string) ([]*runtimeapi.Container, error) {
	l, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID, LabelSelector: selector}})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	return l.GetContainers(), nil
}

// containerInfo is what a container's verbose status tells beyond its
// CRI status: its first process and the OCI spec the runtime gave the
// OCI runtime (containerd and CRI-O both report them under "info").
type containerInfo struct {
	Status *runtimeapi.ContainerStatus
	Pid    int
	Spec   *rspec.Spec
}

// inspect returns a container's status with its pid and OCI spec. A
// runtime that reports no spec gives a nil Spec.
func (c *criClient) inspect(ctx context.Context, id string) (*containerInfo, error) {
	st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("CRI ContainerStatus %s: %w", short(id), err)
	}
	ci := &containerInfo{Status: st.GetStatus()}
	if raw, ok := st.GetInfo()["info"]; ok {
		var v struct {
			Pid         int         `json:"pid"`
			RuntimeSpec *rspec.Spec `json:"runtimeSpec"`
		}
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, fmt.Errorf("CRI ContainerStatus %s: its info: %w", short(id), err)
		}
		ci.Pid, ci.Spec = v.Pid, v.RuntimeSpec
	}
	return ci, nil
}

// exec runs argv in a container and returns its output. An error says
// why the command could not run or that it failed.
func (c *criClient) exec(ctx context.Context, id string, timeoutSec int64, argv ...string) (string, error) {
	r, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: argv, Timeout: timeoutSec})
	if err != nil {
		return "", fmt.Errorf("ExecSync %s: %w", strings.Join(argv, " "), err)
	}
	if r.GetExitCode() != 0 {
		return string(r.GetStdout()), fmt.Errorf("ExecSync %s: exit %d: %s", strings.Join(argv, " "), r.GetExitCode(), strings.TrimSpace(string(r.GetStderr())))
	}
	return string(r.GetStdout()), nil
}

// isUnimplemented reports whether the runtime does not implement a CRI
// method.
func isUnimplemented(err error) bool {
	return status.Code(err) == codes.Unimplemented
}

// rpcMessage returns the text of a gRPC error without its "rpc error:
// code = ... desc =" wrapping.
func rpcMessage(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time (" + err.Error() + ")"
	}
	if st, ok := status.FromError(err); ok {
		return st.Code().String() + ": " + st.Message()
	}
	return err.Error()
}

// short abbreviates an object ID for messages.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
