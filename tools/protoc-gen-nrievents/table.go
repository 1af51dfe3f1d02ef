package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/nrikit/nrikit/tools/internal/nriline"
)

// event is one row of the table: an Event value and its facts.
type event struct {
	enum     string // the Go constant, Event_RUN_POD_SANDBOX
	method   string // the Plugin service's method, RunPodSandbox
	request  string // its request's full name
	response string // its response's full name
	export   string // its WASM export, plugin_run_pod_sandbox
	// req and rsp are the Go types of its request and response.
	req, rsp protogen.GoIdent
	kind     string // EventMutating, EventNotification or EventValidating
	since    string // the first NRI release that delivers it
	pod      bool   // a pod event: its request has no container
	fallback bool   // delivered through StateChange by NRI v0.11 and earlier
}

// kinds maps a line's kind to the constant of package api.
var kinds = map[string]string{
	"mutating":     "EventMutating",
	"notification": "EventNotification",
	"validating":   "EventValidating",
}

// versionRE is what "since=" takes: a release or a Go pseudo-version.
var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// readEvents reads the table from file f: nil if f has no enum Event.
func readEvents(f *protogen.File) ([]event, error) {
	var enum *protogen.Enum
	for _, e := range f.Enums {
		if e.Desc.Name() == "Event" {
			enum = e
		}
	}
	if enum == nil {
		return nil, nil
	}
	methods := map[string]*protogen.Method{}
	for _, s := range f.Services {
		if s.Desc.Name() == "Plugin" {
			for _, m := range s.Methods {
				methods[string(m.Desc.Name())] = m
			}
		}
	}
	var (
		out  []event
		errs []error
	)
	for _, v := range enum.Values {
		name := string(v.Desc.Name())
		if name == "UNKNOWN" || name == "LAST" {
			continue
		}
		ev, err := readEvent(v, methods)
		if err != nil {
			errs = append(errs, fmt.Errorf("enum Event value %s: %w", name, err))
			continue
		}
		out = append(out, ev)
	}
	if last := enum.Values[len(enum.Values)-1]; last.Desc.Name() != "LAST" || int(last.Desc.Number()) != len(out)+1 {
		errs = append(errs, fmt.Errorf("enum Event: LAST must be the last value, one past the events (%d)", len(out)+1))
	}
	return out, errors.Join(errs...)
}

// readEvent reads value v's row: its "nri:" line and its method.
func readEvent(v *protogen.EnumValue, methods map[string]*protogen.Method) (event, error) {
	ev := event{enum: v.GoIdent.GoName, method: camel(string(v.Desc.Name()))}
	m := methods[ev.method]
	if m == nil {
		return ev, fmt.Errorf("the Plugin service has no method %s", ev.method)
	}
	ev.request, ev.response = string(m.Input.Desc.FullName()), string(m.Output.Desc.FullName())
	ev.req, ev.rsp = m.Input.GoIdent, m.Output.GoIdent
	ev.export = "plugin_" + strings.ToLower(string(v.Desc.Name()))
	ev.pod = m.Input.Desc.Fields().ByName("container") == nil
	line, ok := nriline.Line(v.Comments.Leading)
	if !ok {
		return ev, errors.New(`no "// nri: since=VERSION kind=KIND [statechange]" line above it`)
	}
	for _, word := range strings.Fields(line) {
		key, val, _ := strings.Cut(word, "=")
		switch {
		case key == "since" && versionRE.MatchString(val):
			ev.since = val
		case key == "kind" && kinds[val] != "":
			ev.kind = kinds[val]
		case word == "statechange":
			ev.fallback = true
		default:
			return ev, fmt.Errorf("nri: %q: unknown or malformed %q", line, word)
		}
	}
	if ev.since == "" || ev.kind == "" {
		return ev, fmt.Errorf("nri: %q: since= and kind= are required", line)
	}
	return ev, nil
}

// camel turns an enum value's name into its method's: RUN_POD_SANDBOX is
// RunPodSandbox.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(s), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
