// Package filter evaluates plugin scopes: it compiles an api.PluginScope,
// the set of pods and containers a plugin wants events about, into an
// immutable Filter that the runtime consults before delivering each event
// (and that the stub consults on a runtime that does not evaluate scopes).
//
// # Semantics
//
// Every criterion that is set must hold (AND). The entries of one list
// criterion are alternatives (OR): the criterion holds if any entry does. An
// unset or empty criterion, and so a nil or empty scope, matches everything.
//
//   - namespaces: the pod's namespace matches one of the globs.
//   - pod_label_selector: the pod's labels satisfy the Kubernetes label
//     selector (see ParseSelector), e.g. "gpu=true,tier in (a,b),!legacy".
//   - pod_annotations: one of the conditions holds for the pod's annotations.
//   - runtime_handlers: the pod's runtime handler equals one of the names
//     exactly; list "" to include pods of the runtime's default handler.
//   - container_annotations: one of the conditions holds for the
//     container's annotations.
//   - container_names: the container's name matches one of the globs.
//   - images: the container's image name (api.Container.Image.Name, as the
//     runtime reports it, e.g. "registry.io/gpu/cuda:12"; no normalisation
//     of short names) matches one of the globs.
//   - cel: the CEL expression evaluates to true (see below).
//
// An annotation condition (api.AnnotationMatch) holds if the annotation key
// is present and: op EXISTS, whatever its value (value must be empty); op
// EQUALS, its value equals value; op REGEX, its value matches the RE2
// regular expression value, anchored at both ends ("gpu-.*" matches
// "gpu-a100" but not "my-gpu-a100").
//
// Pod-level criteria (namespaces, pod_label_selector, pod_annotations,
// runtime_handlers) apply to pod events and, through the container's pod, to
// container events. Container-level criteria (container_annotations,
// container_names, images) apply to container events only: a pod event
// matches if the pod-level criteria hold, since the pod may hold containers
// that match. The CEL expression applies to both, as described below.
//
// # Globs
//
// Globs are shell patterns: '*' matches any sequence of characters, '?' any
// single character, "[abc]" or "[a-z]" one character of the class, "[^a-z]"
// or "[!a-z]" one character outside it, and `\c` the character c itself.
// Unlike path.Match, '*' and '?' also match '/', so "registry.io/gpu/*"
// matches "registry.io/gpu/cuda:12" and "registry.io/gpu/x/y:1", and
// "*/cuda:*" matches "nvcr.io/nvidia/cuda:12.4". A pattern must match the
// whole name. Empty and malformed patterns are compile errors.
//
// # CEL
//
// The expression sees two variables, both of object type, whose fields are:
//
//	pod.id, pod.name, pod.namespace, pod.uid, pod.runtime_handler   string
//	pod.labels, pod.annotations                                     map(string, string)
//	container.id, container.name, container.image                   string
//	container.labels, container.annotations                         map(string, string)
//	container.args                                                  list(string)
//	container.env                                                   map(string, string)
//
// container.image is the image name; container.env maps each variable of
// the container's "NAME=value" environment to its value (the last one if
// set more than once). A misspelt field is a compile error. has(x.f) is true
// if the field is not empty. Missing map keys are evaluation errors, as
// always in CEL, so write "k" in pod.labels && pod.labels["k"] == "v", or
// pod.labels[?"k"].orValue("") == "v".
//
// For a container event both variables are bound. For a pod event the
// container variable is unknown and the expression is evaluated partially:
// the event matches unless the expression is false whatever the container.
// Thus `pod.labels["accel"] == "gpu" && container.name != "sidecar"` matches
// the pod events of pods labelled accel=gpu and the container events of
// their containers not named sidecar, the same rule that applies to the
// container-level criteria above.
//
// CEL support is not part of this package: Compile takes a CEL
// implementation with WithCEL, such as
// github.com/nrikit/nrikit/filter/celscope's:
//
//	f, err := filter.Compile(scope, filter.WithCEL(celscope.Compile))
//
// so that a program that compiles scopes without CEL expressions (a
// plugin, typically) does not link a CEL implementation. Without WithCEL,
// a scope with a CEL expression is a compile error wrapping ErrNoCEL.
//
// The expression must have type bool. It is compiled once, with CEL's
// standard library and optional values, and must not exceed a cost limit (DefaultCELCostLimit,
// or WithCELCostLimit): Compile rejects expressions whose estimated
// worst-case cost is over the limit (estimated from size hints of at most 64
// map entries, 256 arguments and field lengths like Kubernetes' limits), and
// each evaluation is aborted once its actual cost passes it. Compile errors
// carry CEL's message with the position of the problem. An evaluation that
// fails (a missing map key, the cost limit) counts as no match and is
// reported to the WithEvalErrorHandler callback and the WithLogger logger as
// an *EvalError.
//
// # Combining scopes
//
// And combines filters, e.g. the plugin's own scope (ConfigureResponse.scope)
// and the one its administrator configured for it: an event must be in
// every scope.
//
// # Configuration form
//
// api.PluginScope has JSON tags, so an administrator's configuration can
// state a scope as JSON (with encoding/json, or protojson, which also takes
// the enum name for op):
//
//	{
//	  "namespaces": ["ml-*", "research"],
//	  "pod_label_selector": "gpu=true,tier in (a,b),!legacy",
//	  "pod_annotations": [{"key": "example.com/accelerator"}],
//	  "container_annotations": [{"key": "example.com/profile", "op": 2, "value": "gpu-.*"}],
//	  "runtime_handlers": ["nvidia", "runc"],
//	  "container_names": ["trainer*"],
//	  "images": ["registry.io/gpu/*", "nvcr.io/*"],
//	  "cel": "!(\"example.com/skip\" in pod.annotations)"
//	}
//
// (op: 0 EXISTS, 1 EQUALS, 2 REGEX.) Compile it and log the effective scope:
//
//	var scope api.PluginScope
//	if err := json.Unmarshal(data, &scope); err != nil { ... }
//	admin, err := filter.Compile(&scope, filter.WithCEL(celscope.Compile))
//	if err != nil { ... }
//	f := filter.And(pluginFilter, admin)
//	logger.Info("plugin registered", "scope", f.String())
package filter
