package pipeline

import "testing"

// TestFirstLineKeepsTheCause: a reason cut to one line for the summary
// and the manifest keeps the log tail's last line, most often the cause,
// instead of ending at "last lines of server.log:".
func TestFirstLineKeepsTheCause(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"server exited before listening on 127.0.0.1:1: exit status 1; last lines of server.log:\n  | starting\n  | fatal: no model\n", "server exited before listening on 127.0.0.1:1: exit status 1; last lines of server.log: … | fatal: no model"},
		{"two lines\nno tail", "two lines …"},
		{"tail with blank last\n  | the cause\n  | \n", "tail with blank last … | the cause"},
	} {
		if got := firstLine(tc.in); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
