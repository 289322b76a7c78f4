package pipeline

import "testing"

// TestFirstLineKeepsTheCause: a reason cut to one line for the summary
// and the manifest keeps the log tail's last error line (else its last
// line), most often the cause, instead of ending at "last lines of
// server.log:".
func TestFirstLineKeepsTheCause(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"server exited before listening on 127.0.0.1:1: exit status 1; last lines of server.log:\n  | starting\n  | fatal: no model\n", "server exited before listening on 127.0.0.1:1: exit status 1; last lines of server.log: … | fatal: no model"},
		{"two lines\nno tail", "two lines …"},
		{"tail with blank last\n  | the cause\n  | \n", "tail with blank last … | the cause"},
		// The program wrote its data's first byte after its error (stdout
		// and stderr share the log, in whatever order the pipes gave).
		{"bench failed: exit status 1; last lines of bench.log:\n  | main: error: failed to load model 'm.gguf'\n  | [\n", "bench failed: exit status 1; last lines of bench.log: … | main: error: failed to load model 'm.gguf'"},
		// No line says error: the last that is not the program's data.
		{"sh failed: exit status 2; last lines of bench.log:\n  | ggml_cuda: device lost\n  | {\"n_prompt\": 64}\n", "sh failed: exit status 2; last lines of bench.log: … | ggml_cuda: device lost"},
		{"sh failed: exit status 2; last lines of bench.log:\n  | {\"n_prompt\": 64}\n", "sh failed: exit status 2; last lines of bench.log: … | {\"n_prompt\": 64}"},
		// benchrun's own note of how it stopped the program follows the
		// program's last words, which say where it hung.
		{"stage bench timed out after 1s; last lines of bench.log:\n  | running test pp512\n  | benchrun: program still running 100ms after SIGINT; sending SIGTERM\n", "stage bench timed out after 1s; last lines of bench.log: … | running test pp512"},
		{"stage bench timed out after 1s; last lines of bench.log:\n  | benchrun: program still running 100ms after SIGINT; sending SIGTERM\n", "stage bench timed out after 1s; last lines of bench.log: … | benchrun: program still running 100ms after SIGINT; sending SIGTERM"},
		// A structured line below error level is not the cause.
		{"x: exit status 1; last lines of x.log:\n  | fatal: no GPU\n  | level=INFO msg=\"error budget unknown\"\n", "x: exit status 1; last lines of x.log: … | fatal: no GPU"},
	} {
		if got := firstLine(tc.in); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
