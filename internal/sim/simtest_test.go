package sim_test

import (
	"reflect"
	"testing"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// TestSimtestCountsAsTheRule: simtest's count, which other packages'
// tests take as the truth, is the rule this package's tests hold the
// tokenizer to, for every personality.
func TestSimtestCountsAsTheRule(t *testing.T) {
	texts := []string{
		"", "the", "the of and", "between something", sim.Word(0), sim.Word(7) + " kemi bado",
		"bado " + sim.Word(3) + " kemi", "odd wordy " + sim.Word(1), "  spaced\tout\nwords  ",
		"héllo wörld", "a\u00a0b\u0085c", "<|user|> hello there <|end|> <|assistant|>",
	}
	for _, p := range append([]string{""}, sim.Personalities()...) {
		for _, text := range texts {
			for _, special := range []bool{false, true} {
				if got, want := simtest.CountPromptTokens(p, text, special), sim.CountPromptTokens(p, text, special); got != want {
					t.Errorf("CountPromptTokens(%q, %q, %v): simtest %d, the rule %d", p, text, special, got, want)
				}
			}
			if got, want := simtest.CompletionPromptTokens(p, text), sim.CompletionPromptTokens(p, text); got != want {
				t.Errorf("CompletionPromptTokens(%q, %q): simtest %d, the rule %d", p, text, got, want)
			}
		}
		if got, want := simtest.DefaultConfigFor(p), sim.DefaultConfigFor(p); !reflect.DeepEqual(got, want) {
			t.Errorf("DefaultConfigFor(%q): simtest %+v, sim %+v", p, got, want)
		}
	}
}
