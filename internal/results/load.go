package results

import "fmt"

// LoadPoint is where a cell sits on its stage's load axis, and how people
// name it: the request rate of an open-loop cell ("2 req/s"), a trace
// replay's speed-up and the mean rate it made ("trace x2 (3.1 req/s)"),
// else the concurrency ("c=4"). Every label of a load level (reports,
// notebooks, compare --html) starts from this one.
func LoadPoint(c *Cell) (x float64, label string) {
	switch {
	case c.TimeScale != nil:
		return c.Rate, fmt.Sprintf("trace x%g (%.3g req/s)", *c.TimeScale, c.Rate)
	case c.Rate > 0:
		return c.Rate, fmt.Sprintf("%g req/s", c.Rate)
	}
	return float64(c.Concurrency), fmt.Sprintf("c=%d", c.Concurrency)
}
