// Package celscope is the CEL implementation of plugin scopes: Compile
// compiles a scope's CEL expression (api.PluginScope.cel) for package
// filter, which takes it as an option:
//
//	f, err := filter.Compile(scope, filter.WithCEL(celscope.Compile))
//
// The expression's variables, types, cost limits and its evaluation for
// pod events (with the container unknown) are described in package
// filter's documentation, section CEL. CEL is a package of its own because
// its implementation (cel.dev/cel-go) adds several megabytes to a binary:
// nrikit's runtime library links it, a plugin only if it asks for it
// (stub.WithCEL).
package celscope
