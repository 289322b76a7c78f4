package results

import "testing"

func TestLoadPoint(t *testing.T) {
	two := 2.0
	for _, c := range []struct {
		cell  Cell
		x     float64
		label string
	}{
		{Cell{Concurrency: 4}, 4, "c=4"},
		{Cell{Concurrency: 64, Rate: 2.5}, 2.5, "2.5 req/s"},
		{Cell{Concurrency: 8, Rate: 3.14159, TimeScale: &two}, 3.14159, "trace x2 (3.14 req/s)"},
	} {
		x, label := LoadPoint(&c.cell)
		if x != c.x || label != c.label {
			t.Errorf("%+v: (%g, %q), want (%g, %q)", c.cell, x, label, c.x, c.label)
		}
	}
}
