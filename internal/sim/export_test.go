package sim

// DefaultConfigFor is DefaultConfig with ApplyPersonality(name); it panics
// on an unknown name (a programming error in a test). Other packages'
// tests have simtest.DefaultConfigFor.
func DefaultConfigFor(name string) Config {
	cfg := DefaultConfig()
	if err := ApplyPersonality(&cfg, name); err != nil {
		panic("sim: " + err.Error())
	}
	return cfg
}

// Word returns the vocabulary word for id mod VocabSize: a word the
// tests know to be one token.
func Word(id int) string { return vocab[uint(id)%VocabSize] }

// wordTokens is the subword cost of one word (no Ollama quirk).
func wordTokens(w string) int {
	if _, ok := vocabIndex[w]; ok {
		return 1
	}
	return (len(w) + pieceLen - 1) / pieceLen
}

// CountPromptTokens is how many tokens personality's tokenizer makes of
// text, counted by the rule (subword.go's comment) rather than by building
// the ids: the tests' ground truth, which simtest.CountPromptTokens
// mirrors for other packages' tests. A BOS token comes first when
// addSpecial (the generic personality has no BOS and counts one token per
// word whatever addSpecial says). It panics on an unknown personality.
// Which endpoints add BOS:
//
//   - completions with a string prompt and chat: every personality but
//     generic (CompletionPromptTokens, ChatPromptTokens);
//   - /tokenize: vllm and sglang unless add_special_tokens is false;
//     llama-server only with add_special: true.
func CountPromptTokens(personality, text string, addSpecial bool) int {
	mustPersona(personality)
	if !subword(personality) {
		return CountTokens(text)
	}
	n := 0
	if addSpecial {
		n++
	}
	first := true
	forEachWord(text, func(w string) {
		n += wordTokens(w)
		if first && normPersona(personality) == PersonaOllama {
			n += ollamaExtra(w)
		}
		first = false
	})
	return n
}

// CompletionPromptTokens is usage.prompt_tokens of a /v1/completions
// request whose prompt is text (before Ollama's truncation to its context).
func CompletionPromptTokens(personality, text string) int {
	return CountPromptTokens(personality, text, subword(personality))
}

// RenderChat is the chat template's text for msgs, as llama-server's
// /apply-template returns it: "<|role|> content <|end|> " per message, then
// "<|assistant|>".
func RenderChat(personality string, msgs []ChatMessage) string {
	mustPersona(personality)
	return renderChat(msgs)
}

// ChatPromptTokens is usage.prompt_tokens of a chat request with msgs: the
// rendered template counted by the personality's rule, plus BOS for every
// personality but generic.
func ChatPromptTokens(personality string, msgs []ChatMessage) int {
	return CountPromptTokens(personality, renderChat(msgs), subword(personality))
}

// TokenizeAs returns the ids personality's tokenizer gives text (BOS first
// when addSpecial, for the subword personalities).
func TokenizeAs(personality, text string, addSpecial bool) []int {
	mustPersona(personality)
	if !subword(personality) {
		return Tokenize(text)
	}
	ids, _ := tokenizeSubword(personaOf(personality), text, addSpecial, false)
	return ids
}

// chatTokensPerMessage and chatTokensTrailer are a chat template's cost
// beside its messages' words (tokenizer.go's comment).
const (
	chatTokensPerMessage = 2
	chatTokensTrailer    = 1
)

// chatTokenCount is the closed form of a chat prompt's token count,
// which the tests hold the rendered template to.
func chatTokenCount(msgs []chatMessage) int {
	n := chatTokensTrailer
	for _, m := range msgs {
		n += CountTokens(m.Content) + chatTokensPerMessage
	}
	return n
}
