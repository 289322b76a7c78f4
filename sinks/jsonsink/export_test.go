package jsonsink

// Writes is how many times o wrote result.json (for the tests).
func Writes(o *Sink) int { return o.writes }
