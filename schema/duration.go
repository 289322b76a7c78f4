package schema

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// durationShape is #Duration's form ("1h30m", "500ms"), whatever its
// size.
var durationShape = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)

// ParseDuration reads a bound a plan writes as a #Duration: positive, and
// within what a duration holds. Its error says what to write instead.
func ParseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil && strings.Contains(err.Error(), "invalid duration") && durationShape.MatchString(v):
		// Well formed, but past what a duration can hold (about 290
		// years): too long, not "not positive".
		return 0, fmt.Errorf("%q is longer than any run (a duration holds at most about 290 years); write a bound such as \"30s\" or \"2m\"", v)
	case err != nil || d <= 0:
		return 0, fmt.Errorf("%q is not a positive duration (write it as \"30s\" or \"2m\")", v)
	}
	return d, nil
}
