package pipeline

import "github.com/benchrun/benchrun/schema"

// sampleWarnings are vet's warnings for row-level checks on percentiles
// that the stage's cells, as the plan sizes them, cannot bound (a p99
// over 8 requests): their verdicts would be inconclusive whatever the
// server did. One warning per check, at the check.
func sampleWarnings(g *Graph) schema.Errors {
	var out schema.Errors
	for _, n := range g.Nodes {
		ls, ok := n.Stage.(LoadShaper)
		if !ok {
			continue
		}
		shape := ls.LoadShape()
		for _, a := range n.asserts {
			for _, c := range shape.Cells {
				if msg := a.SampleWarning(shape.Requests, c.OSL); msg != "" {
					out = append(out, schema.Error{Pos: a.Pos, Msg: msg})
					break
				}
			}
		}
	}
	return out
}
