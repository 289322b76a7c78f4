package sim

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The subword tokenizer of the vllm, llama-server, sglang and ollama
// personalities. Real BPE and SentencePiece tokenizers split words, so a
// client that counts words (or assumes one token per word) is off; this
// rule is simple enough for a test to compute the ground truth
// (simtest.CountPromptTokens):
//
//   - a word (strings.Fields) of the simulator's 4096-word vocabulary, which
//     is what generated text consists of, is 1 token;
//   - any other word is ceil(len(word)/4) tokens: consecutive 4-byte pieces
//     ("the", "of", "time" are 1 token, "between" 2, "something" 3);
//   - a BOS token where the engine adds one: completions with a string
//     prompt and chat always, /tokenize as the engine's own does
//     (docs/SIM.md);
//   - Ollama only: the first word of the text costs 1 more token when its
//     length is even and 2 more when odd, so a calibration that assumes the
//     rule above is off by 1-2 tokens, as one against a real engine is.
//
// Ids: vocabulary words keep their index (0..4095); BOSToken is 4096; a
// piece of printable ASCII (0x21-0x7e) gets a reversible id, so /detokenize
// is exact for ASCII text (words joined by single spaces); a piece with
// other bytes gets a hashed id and detokenizes as U+FFFD.

// BOSToken is the subword tokenizer's beginning-of-sequence id; it renders
// as "<s>".
const BOSToken = VocabSize

const (
	bosText    = "<s>"
	quirkToken = VocabSize + 1 // Ollama's extra first-word tokens; render as ""
	pieceBase  = VocabSize + 2
	nPrintable = 94 // bytes 0x21..0x7e
	// nASCIIPieces is the number of printable pieces of 1 to 4 bytes.
	nASCIIPieces = nPrintable + nPrintable*nPrintable + nPrintable*nPrintable*nPrintable + nPrintable*nPrintable*nPrintable*nPrintable
	hashBase     = pieceBase + 2*nASCIIPieces
	pieceLen     = 4
)

// pieceOffset[L] is where pieces of length L start among the ASCII ids.
var pieceOffset = [pieceLen + 1]int{0, 0, nPrintable, nPrintable + nPrintable*nPrintable,
	nPrintable + nPrintable*nPrintable + nPrintable*nPrintable*nPrintable}

// ollamaExtra is Ollama's extra cost for the first word of a prompt.
func ollamaExtra(first string) int {
	if len(first)%2 == 0 {
		return 1
	}
	return 2
}

// subword reports whether personality uses the subword tokenizer.
func subword(personality string) bool {
	p := personaOf(personality)
	return p == nil || p.subword
}

// ChatMessage is one message of a chat request.
type ChatMessage struct {
	Role    string
	Content string
}

// DetokenizeAs renders ids with personality's tokenizer.
func DetokenizeAs(personality string, ids []int) string {
	mustPersona(personality)
	return personaOf(personality).detokenize(ids)
}

// detokenize renders ids with the persona's tokenizer.
func (p *persona) detokenize(ids []int) string {
	if !p.subword {
		return Detokenize(ids)
	}
	return detokenizeSubword(ids)
}

func mustPersona(p string) {
	if !ValidPersonality(p) {
		panic("sim: unknown personality " + p)
	}
}

// forEachWord calls f with each whitespace-separated word of text, as
// strings.Fields splits it, without allocating the slice.
func forEachWord(text string, f func(w string)) {
	start := -1
	for i, r := range text {
		if isSpace(r) {
			if start >= 0 {
				f(text[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		f(text[start:])
	}
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
	}
	return unicode.IsSpace(r)
}

// tokenizeSubword returns the ids of text and, with pieces, each token's
// text as llama-server's with_pieces shows it (word-initial pieces carry
// their leading space, SentencePiece style).
func tokenizeSubword(per *persona, text string, addSpecial, pieces bool) ([]int, []string) {
	ids := make([]int, 0, len(text)/3+2)
	var strs []string
	if addSpecial {
		ids = append(ids, BOSToken)
		if pieces {
			strs = append(strs, bosText)
		}
	}
	first := true
	forEachWord(text, func(w string) {
		if id, ok := vocabIndex[w]; ok {
			ids = append(ids, id)
			if pieces {
				strs = append(strs, " "+w)
			}
		} else {
			for off := 0; off < len(w); off += pieceLen {
				p := w[off:min(off+pieceLen, len(w))]
				ids = append(ids, pieceID(p, off > 0))
				if pieces {
					if off == 0 {
						p = " " + p
					}
					strs = append(strs, p)
				}
			}
		}
		if first && per.firstWordQuirk {
			for range ollamaExtra(w) {
				ids = append(ids, quirkToken)
				if pieces {
					strs = append(strs, "")
				}
			}
		}
		first = false
	})
	return ids, strs
}

// pieceID is the id of a piece of 1..4 bytes; cont marks a piece that
// continues a word (no space before it).
func pieceID(p string, cont bool) int {
	c := 0
	if cont {
		c = 1
	}
	v, ok := 0, true
	for i := 0; i < len(p); i++ {
		b := p[i]
		if b < 0x21 || b > 0x7e {
			ok = false
			break
		}
		v = v*nPrintable + int(b-0x21)
	}
	if ok {
		return pieceBase + c*nASCIIPieces + pieceOffset[len(p)] + v
	}
	return hashBase + 2*int(fnv1a(p)%oovSpace) + c
}

// decodePiece inverts pieceID for ASCII pieces; hashed pieces give U+FFFD.
func decodePiece(id int) (piece string, cont, ok bool) {
	switch {
	case id >= pieceBase && id < hashBase:
		v := id - pieceBase
		if v >= nASCIIPieces {
			cont = true
			v -= nASCIIPieces
		}
		n := pieceLen
		for n > 1 && v < pieceOffset[n] {
			n--
		}
		v -= pieceOffset[n]
		b := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			b[i] = byte(0x21 + v%nPrintable)
			v /= nPrintable
		}
		return string(b), cont, true
	case id >= hashBase && id < hashBase+2*oovSpace:
		return "\ufffd", (id-hashBase)%2 == 1, true
	}
	return "", false, false
}

// detokenizeSubword concatenates the tokens' pieces: vocabulary words and
// word-initial pieces start a new word (a space before, except at the
// start), continuation pieces extend the current one.
func detokenizeSubword(ids []int) string {
	var b strings.Builder
	space := func() {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
	}
	for _, id := range ids {
		switch {
		case id >= 0 && id < VocabSize:
			space()
			b.WriteString(vocab[id])
		case id == BOSToken:
			space()
			b.WriteString(bosText)
		case id == quirkToken:
		default:
			p, cont, ok := decodePiece(id)
			if !ok {
				p = "\ufffd"
			}
			if !cont {
				space()
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// renderChatOpts is renderChat, optionally without the trailing generation
// prompt (vLLM's add_generation_prompt: false).
func renderChatOpts(msgs []chatMessage, genPrompt bool) string {
	r := renderChat(msgs)
	if !genPrompt {
		r = strings.TrimSuffix(r, "<|assistant|>")
	}
	return r
}
