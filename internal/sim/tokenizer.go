package sim

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokenizer is one token per whitespace-separated word (strings.Fields
// semantics). That makes exact-length prompts trivial to build (n words) and
// keeps /tokenize, usage.prompt_tokens and the streamed text consistent: every
// generated token is written as " word", so the concatenated output tokenizes
// back to exactly completion_tokens.
//
// Token ids: the vocabulary is 4096 pronounceable two-syllable words ("bado",
// "kemi", ...); a vocabulary word's id is its index, so /detokenize of ids
// below VocabSize is exact. Any other word gets VocabSize + FNV-1a(word) mod
// 2^24, and /detokenize renders such an id as "tok<id>" (one word, so counts
// still round-trip even though the text does not).

// VocabSize is the number of vocabulary words with exact round trips.
const VocabSize = 4096

const oovSpace = 1 << 24

var (
	consonants = [16]string{"b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z"}
	vowels     = [4]string{"a", "e", "i", "o"}
	vocab      [VocabSize]string
	vocabIndex = make(map[string]int, VocabSize)
)

func init() {
	var syl [64]string
	for i := range syl {
		syl[i] = consonants[i/4] + vowels[i%4]
	}
	for i := range vocab {
		w := syl[i/64] + syl[i%64]
		vocab[i] = w
		vocabIndex[w] = i
	}
}

// CountTokens counts the tokens of text without allocating.
func CountTokens(text string) int {
	n := 0
	in := false
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		sp := unicode.IsSpace(r)
		if !sp && !in {
			n++
		}
		in = !sp
		i += size
	}
	return n
}

// Tokenize returns the token ids of text.
func Tokenize(text string) []int {
	words := strings.Fields(text)
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = tokenID(w)
	}
	return ids
}

func tokenID(w string) int {
	if id, ok := vocabIndex[w]; ok {
		return id
	}
	return VocabSize + int(fnv1a(w)%oovSpace)
}

// Detokenize renders ids as space-separated words (see the package comment
// for ids outside the vocabulary).
func Detokenize(ids []int) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		if id >= 0 && id < VocabSize {
			b.WriteString(vocab[id])
		} else {
			b.WriteString("tok")
			b.WriteString(strconv.Itoa(id))
		}
	}
	return b.String()
}

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is splitmix64's finaliser: a cheap, well-spread hash used to derive
// deterministic per-request and per-token choices from the seed.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitFloat maps a hash to [0, 1).
func unitFloat(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Chat template: each message renders as "<|role|> content <|end|>", and the
// prompt ends with "<|assistant|>", so a chat prompt costs
// sum(words(content) + 2) + 1 tokens (chatTokenCount, in the tests). This
// mimics the overhead real chat templates add, which clients must
// calibrate for (via /tokenize with "messages").
type chatMessage = ChatMessage

func renderChat(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|")
		b.WriteString(m.Role)
		b.WriteString("|> ")
		b.WriteString(m.Content)
		b.WriteString(" <|end|> ")
	}
	b.WriteString("<|assistant|>")
	return b.String()
}
