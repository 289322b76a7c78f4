package launch

import (
	"fmt"
	"slices"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/schema"
)

// LoRA adapters (adapters: [{name, path}]): the engine preset's flags that
// load them (engines.Engine.LoRAArgs: vLLM's --enable-lora --lora-modules
// name=path, SGLang's --lora-paths, llama-server's --lora, the
// simulator's --lora-modules) follow the plan's cmd, so a sweep's model
// mix can name each adapter as a model (docs/PLANS.md, Model mixes).

// withAdapters is cmd with the flags that load the stage's adapters.
func (s *Stage) withAdapters(cmd []string) []string {
	if len(s.cfg.Adapters) == 0 {
		return cmd
	}
	e := engines.For(s.cfg.Engine)
	if e.LoRAArgs == nil {
		return cmd // checkAdapters refused it
	}
	pairs := make([][2]string, len(s.cfg.Adapters))
	for i, a := range s.cfg.Adapters {
		pairs[i] = [2]string{a.Name, a.Path}
	}
	return append(slices.Clone(cmd), e.LoRAArgs(pairs)...)
}

// checkAdapters refuses adapters the engine preset cannot load, a shell
// command (whose words benchrun does not split), and a name given twice.
func (s *Stage) checkAdapters() schema.Errors {
	if len(s.cfg.Adapters) == 0 {
		return nil
	}
	var errs schema.Errors
	bad := func(path []string, format string, args ...any) {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf(path...), Msg: fmt.Sprintf("stages.%s.%s: ", s.spec.Name, joinPath(path)) + fmt.Sprintf(format, args...)})
	}
	if e := engines.For(s.cfg.Engine); e.LoRAArgs == nil {
		bad([]string{"adapters"}, "engine %q: benchrun knows no flags that load LoRA adapters for it (vllm, sglang, llama-server and sim have them): set engine, or give the flags in cmd", s.cfg.Engine)
	}
	if s.cfg.Shell {
		bad([]string{"adapters"}, "adapters are appended to cmd as words: give cmd as a list, not shell: true")
	}
	seen := map[string]bool{}
	for i, a := range s.cfg.Adapters {
		if seen[a.Name] {
			bad([]string{"adapters", fmt.Sprint(i), "name"}, "adapter %q is given twice", a.Name)
		}
		seen[a.Name] = true
	}
	return errs
}

func joinPath(path []string) string {
	out := path[0]
	for _, p := range path[1:] {
		out += "." + p
	}
	return out
}
