package launch

import (
	"strings"
	"testing"
)

// TestAdaptersOnTheCommandLine: a launch stage's adapters become the
// engine preset's flags after cmd, each adapter served under its name
// (vLLM's --lora-modules name=path, SGLang's --lora-paths, llama-server's
// --lora per file, the simulator's --lora-modules list); an engine without
// such flags, a shell command and a name given twice are vet errors at
// the field.
func TestAdaptersOnTheCommandLine(t *testing.T) {
	const adapters = `adapters: [{name: "a", path: "/lora/a"}, {name: "b", path: "/lora/b"}]`
	for _, tc := range []struct{ engine, want string }{
		{"vllm", "srv --enable-lora --max-loras 2 --lora-modules a=/lora/a b=/lora/b"},
		{"sglang", "srv --enable-lora --lora-paths a=/lora/a b=/lora/b"},
		{"llama-server", "srv --lora /lora/a --lora /lora/b"},
		{"sim", "srv --lora-modules a=/lora/a,b=/lora/b"},
	} {
		st, _, err := build(t.TempDir(), `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", engine: "`+tc.engine+`", cmd: ["srv"], `+adapters+`}
`, "server")
		if err != nil {
			t.Fatalf("%s: %v", tc.engine, err)
		}
		s := st.(*Stage)
		if err := s.configure(nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.argv, " "); got != tc.want {
			t.Errorf("%s: argv %q, want %q", tc.engine, got, tc.want)
		}
	}
	for _, tc := range []struct{ stage, want string }{
		{`engine: "ollama", cmd: ["srv"], ` + adapters, `plan.cue:3:`},
		{`engine: "ollama", cmd: ["srv"], ` + adapters, `stages.server.adapters: engine "ollama": benchrun knows no flags that load LoRA adapters`},
		{`engine: "vllm", shell: true, cmd: ["srv"], ` + adapters, `stages.server.adapters: adapters are appended to cmd as words`},
		{`engine: "vllm", cmd: ["srv"], adapters: [{name: "a", path: "x"}, {name: "a", path: "y"}]`, `stages.server.adapters.1.name: adapter "a" is given twice`},
	} {
		_, _, err := build(t.TempDir(), `name: "p"
model: {name: "m"}
stages: server: {kind: "launch", `+tc.stage+`}
`, "server")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.stage, err, tc.want)
		}
	}
}
