package main

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/tools/internal/prototest"
)

// TestGlueOfANewEvent adds a notification to the real proto and shows
// that its per-event code appears in every generated file: api's
// UnimplementedPluginService, the ABI's constant, the WASM host's Client
// method, the guest's constant, dispatch case and export, and the
// simulator's replay.
func TestGlueOfANewEvent(t *testing.T) {
	proto := prototest.NRIProto(t)
	text := strings.NewReplacer(
		"  LAST = 15;", "  // nri: since=v0.13.0 kind=notification\n  SHINY_EVENT = 15;\n  LAST = 16;",
		"service Plugin {", "service Plugin {\n  rpc ShinyEvent(ShinyEventRequest) returns (ShinyEventResponse);",
	).Replace(proto) + "\nmessage ShinyEventRequest {\n  PodSandbox pod = 1;\n  Container container = 2;\n}\nmessage ShinyEventResponse {}\n"
	if !strings.Contains(text, "SHINY_EVENT") || !strings.Contains(text, "rpc ShinyEvent") {
		t.Fatal("the proto's enum Event or service Plugin moved: the edit did not apply")
	}
	const mod = "github.com/nrikit/nrikit"
	gen := prototest.Plugin(t, text, "module="+mod+",wasmabi="+mod+"/internal/wasmabi,wasmhost="+mod+"/internal/wasmhost,wasmguest="+
		mod+"/stub/wasmguest,replay="+mod+"/cmd/nri/internal/simulator")
	f := gen.Files[0]
	events, err := readEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	writeEvents(gen, f, events)
	if err := writeGlue(gen, f, events, gluePaths{wasmabi: mod + "/internal/wasmabi", wasmhost: mod + "/internal/wasmhost",
		wasmguest: mod + "/stub/wasmguest", replay: mod + "/cmd/nri/internal/simulator"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range gen.Response().GetFile() {
		out[g.GetName()] = g.GetContent()
	}
	for name, want := range map[string][]string{
		"api/events_generated.go":              {`WASMExport: "plugin_shiny_event"`},
		"api/service_generated.go":             {"func (UnimplementedPluginService) ShinyEvent(context.Context, *ShinyEventRequest) (*ShinyEventResponse, error)"},
		"internal/wasmabi/events_generated.go": {`FuncShinyEvent = "plugin_shiny_event"`},
		"internal/wasmhost/events_generated.go": {
			"func (c *Client) ShinyEvent(ctx context.Context, req *api.ShinyEventRequest) (*api.ShinyEventResponse, error)",
			"invoke(ctx, c, wasmabi.FuncShinyEvent, req, &api.ShinyEventResponse{})",
		},
		"stub/wasmguest/events_generated.go": {
			"FuncShinyEvent = wasmabi.FuncShinyEvent",
			"case FuncShinyEvent:\n\t\treturn serve(ctx, s, fn, b, owned, &api.ShinyEventRequest{}, (*core.Session).ShinyEvent)",
		},
		"stub/wasmguest/exports_generated.go": {
			"//go:build wasip1",
			"//go:wasmexport plugin_shiny_event\nfunc pluginShinyEvent(ptr, size uint32) uint64 { return answer(FuncShinyEvent, ptr, size) }",
		},
		"cmd/nri/internal/simulator/events_generated.go": {"case *api.ShinyEventRequest:\n\t\t_ = a.ShinyEvent(ctx, m)"},
	} {
		got, ok := out[name]
		if !ok {
			t.Errorf("no %s generated (have %d files)", name, len(out))
			continue
		}
		for _, w := range want {
			if !strings.Contains(spaces(got), spaces(w)) {
				t.Errorf("%s lacks %q:\n%s", name, w, got)
			}
		}
	}
}

// TestGlueNeedsTheABI refuses the host's or the guest's glue without the
// ABI's constants they name.
func TestGlueNeedsTheABI(t *testing.T) {
	gen := prototest.Plugin(t, prototest.NRIProto(t), "module=github.com/nrikit/nrikit")
	f := gen.Files[0]
	events, err := readEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeGlue(gen, f, events, gluePaths{wasmhost: "github.com/nrikit/nrikit/internal/wasmhost"}); err == nil {
		t.Error("wasmhost without wasmabi: no error")
	}
}

// spaces turns the runs of blanks in s, which gofmt aligns, into one space.
func spaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
