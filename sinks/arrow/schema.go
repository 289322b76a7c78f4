package arrow

import _ "embed"

// schemaSource is the sink kind's CUE definition, #Arrow (schema.cue).
//
//go:embed schema.cue
var schemaSource string
