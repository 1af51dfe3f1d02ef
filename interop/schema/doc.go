// Package schema holds the interoperability module's schema tests: nrikit's
// compiled protocol descriptors against upstream's, both taken from the
// Go packages that peers actually link.
package schema
