package results

// Charge fills a row's cost columns from the machine's price per hour:
// the row is charged for its own window (cost_usd = price × duration_s /
// 3600), and tokens_per_dollar is the output tokens it got over that cost
// (outputTokens <= 0: not counted, NULL). Without a price or a window
// both stay NULL: not measured, never a free run. This is the one
// definition every stage kind and a merged cell use (docs/RESULTS.md).
func Charge(row *Cell, perHour *float64, outputTokens float64) {
	if perHour == nil || *perHour <= 0 || row.DurationS <= 0 {
		return
	}
	cost := *perHour * row.DurationS / 3600
	row.CostUSD = Some(cost)
	if outputTokens > 0 {
		row.TokensPerDollar = Some(outputTokens / cost)
	}
}

// WindowTokens is a row's output tokens over its window, from its output
// throughput (0 when it has none).
func WindowTokens(row *Cell) float64 {
	if row.OutputTokS == nil {
		return 0
	}
	return *row.OutputTokS * row.DurationS
}
