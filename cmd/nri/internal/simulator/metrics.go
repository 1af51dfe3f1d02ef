package simulator

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// WithMetrics registers the runtime library's metrics (package
// adaptation/runtimemetrics) with r.
func WithMetrics(r prometheus.Registerer) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("WithMetrics: nil registerer")
		}
		c.metrics = r
		return nil
	}
}
