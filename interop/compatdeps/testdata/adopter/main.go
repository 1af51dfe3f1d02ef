// Command adopter is a plugin module that adopts nrikit the way
// nri-plugins' resource policies would: it uses pkg/stub and pkg/api,
// OpenTelemetry's SDK, Prometheus and protobuf at its own versions
// (topology-aware's), and diffs YAML with sters/yaml-diff as upstream's
// differ plugin does, which brings an old genproto module into its graph
// (through golangci-lint's requirements), whose googleapis packages the
// split genproto modules also provide. At start it builds its OpenTelemetry
// resource as nri-plugins' instrumentation does, which fails with
// "conflicting Schema URL" when the SDK is not the version whose
// semantic conventions the program imports.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sters/yaml-diff/yamldiff"
	otelresource "go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"google.golang.org/protobuf/proto"
)

type plugin struct{}

func (plugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

func main() {
	res, err := otelresource.Merge(otelresource.Default(),
		otelresource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("adopter")))
	if err != nil {
		fmt.Println("failed to create OTEL resource:", err)
		os.Exit(1)
	}
	if err := prometheus.NewRegistry().Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "adopter_starts_total", Help: "Starts."})); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if _, err := proto.Marshal(&api.Empty{}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if _, err := stub.New(plugin{}, stub.WithPluginIdx("10"), stub.WithPluginName("adopter")); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	diffs := yamldiff.Do(yamldiff.Load("a: 1"), yamldiff.Load("a: 2"))
	fmt.Println("tracing resource", res.SchemaURL(), "yaml diffs", len(diffs))
}
