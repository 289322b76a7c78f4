// Package simtest serves other packages' tests of the simulator's
// engine habits: a configuration with a personality's defaults, and the
// ground truth of the subword tokenizer (docs/SIM.md, "The subword
// tokenizer"), computed from its rule with the simulator's exported
// vocabulary rather than with the tokenizer a test checks a client
// against.
package simtest

import (
	"strings"

	"github.com/benchrun/benchrun/internal/sim"
)

// DefaultConfigFor is sim.DefaultConfig with sim.ApplyPersonality(name),
// as `benchrun sim --as NAME` serves it; it panics on an unknown name (a
// programming error in a test).
func DefaultConfigFor(name string) sim.Config {
	cfg := sim.DefaultConfig()
	if err := sim.ApplyPersonality(&cfg, name); err != nil {
		panic("simtest: " + err.Error())
	}
	return cfg
}

// pieceLen is the subword tokenizer's piece: a word outside the
// vocabulary costs one token per 4 bytes.
const pieceLen = 4

// CountPromptTokens is how many tokens personality's tokenizer makes of
// text, with a BOS token first when addSpecial (the generic personality
// has no BOS and counts one token per word whatever addSpecial says). It
// panics on an unknown personality. Which endpoints add BOS is in
// docs/SIM.md: completions with a string prompt and chat always
// (CompletionPromptTokens).
func CountPromptTokens(personality, text string, addSpecial bool) int {
	if !sim.ValidPersonality(personality) {
		panic("simtest: unknown personality " + personality)
	}
	if !subword(personality) {
		return sim.CountTokens(text)
	}
	n := 0
	if addSpecial {
		n++
	}
	for i, w := range strings.Fields(text) {
		n += wordTokens(w)
		if i == 0 && personality == sim.PersonaOllama {
			n += 1 + len(w)%2 // Ollama's first word: 1 more when even, 2 when odd
		}
	}
	return n
}

// CompletionPromptTokens is usage.prompt_tokens of a /v1/completions
// request whose prompt is text (before Ollama's truncation to its
// context).
func CompletionPromptTokens(personality, text string) int {
	return CountPromptTokens(personality, text, subword(personality))
}

// subword reports whether personality uses the subword tokenizer: every
// one but generic.
func subword(personality string) bool {
	return personality != "" && personality != sim.PersonaGeneric
}

// wordTokens is the subword cost of one word (no Ollama quirk): 1 for a
// word of the vocabulary (the generic tokenizer gives it an id below
// sim.VocabSize), else one per piece.
func wordTokens(w string) int {
	if sim.Tokenize(w)[0] < sim.VocabSize {
		return 1
	}
	return (len(w) + pieceLen - 1) / pieceLen
}
