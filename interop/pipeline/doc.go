// Package pipeline tests a mixed pipeline: two plugins built with
// upstream's stub and two built with nrikit's, pre-installed in the same
// directory, adjust one container under nrikit's runtime and under
// upstream's; the merged results must be identical, and a conflict must
// fail both runtimes naming both plugins.
package pipeline
