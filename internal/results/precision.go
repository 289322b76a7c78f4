package results

// whyNoPrecision: the precision columns are NULL without the sweep's
// `precision` target, and the precision reached also when too few
// requests completed to bound the metric.
func whyNoPrecision(c *Cell, column string) string {
	if c.PrecisionMetric == "" {
		return "the sweep has no precision target"
	}
	if column == ColPrecisionReachedPct {
		if why := noneMeasured(c); why != "" {
			return why
		}
		return "too few requests completed to bound " + c.PrecisionMetric + " (the row's notes say how many it needs)"
	}
	return ""
}
