package json

// Writes is how many times o wrote result.json (for the tests).
func Writes(o *Output) int { return o.writes }
