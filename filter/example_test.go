package filter_test

import (
	"fmt"

	"github.com/nrikit/nrikit/filter"
)

// A label selector error names the column of the problem.
func ExampleParseSelector() {
	_, err := filter.ParseSelector("gpu=true,tier in (a b)")
	fmt.Println(err)
	// Output:
	// label selector "gpu=true,tier in (a b)": column 21: unexpected identifier "b" in a set of values; expected a value, ',' or ')'
}
