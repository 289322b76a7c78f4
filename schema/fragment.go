package schema

import "strings"

// WithFragment is a kind's schema source with a shared fragment's
// definitions appended (stages/internal/client's #Client, say). Every
// kind that embeds the fragment brings a copy; CUE unifies identical
// declarations, so the copies are one definition.
func WithFragment(kindSource, fragment string) string {
	return kindSource + "\n" + strings.TrimPrefix(fragment, "package schema\n")
}
