package loadgen

import (
	"math"
	"math/rand/v2"
	"strings"
)

// words is a small vocabulary of common English words used for synthetic
// prompts. Real tokenizers split them into about one token each; exact
// lengths come from calibration against the server, not from this list.
var words = strings.Fields(`the of and to in is was for on that with as by at from his her they this
which have are one had not but what all were when we there can an your their said if do will each about
how up out them then she many some so these would other into has more two like him see time could no
make than first been its who now people my made over did down only way find use may water long little
very after words called just where most know get through back much before go good new write our used
me man too any day same right look think also around another came come work three word must because
does part even place well such here take why things help put years different away again off went old
number great tell men say small every found still between name should home big give air line set own
under read last never us left end along while might next sound below saw something thought both few
those always looked show large often together asked house world going want school important until form
food keep children feet land side without boy once animals life enough took sometimes four head above
kind began almost live page got earth need far hand high year mother light parts country father let
night following picture being study second eyes soon times story boys since white days ever paper hard
near sentence better best across during today others however sure means knew try told young miles sun
ways thing whole hear example heard several change answer room sea against top turned learn point city
play toward five using himself usually`)

// PromptSource gives every request of a cell its prompt. A prompt depends
// only on the seed, the cell key, the point key, the pass and the
// request's index, never on goroutine timing, so a run is reproducible.
//
// Cold prompts (the default) differ for every request of every pass of
// every ladder point: a server's prompt cache (llama-server's
// cache_prompt, vLLM's prefix caching, SGLang's radix cache) has never
// seen a timed prompt before, warm-up passes included. Warm prompts reuse
// one set everywhere.
type PromptSource struct {
	// ISL is the prompt length in tokens (synthetic prompts).
	ISL int
	// ISLDist and OSLDist, when set, draw each request's prompt and output
	// lengths (ISLOf, OSLOf) in place of ISL and the cell's osl.
	ISLDist, OSLDist *Lengths
	// SharedPrefix tokens open every prompt (a system prompt, a RAG
	// preamble), the same across sessions, passes and ladder points.
	SharedPrefix int
	// Warm reuses one prompt set (indices modulo WarmSet) in every pass, so
	// a prefix cache serves repeats; cold (the default) draws a fresh
	// prompt for every request of every pass.
	Warm    bool
	WarmSet int
	Seed    uint64
	// CellKey separates cells (isl<<32 | osl, say).
	CellKey uint64
	// PointKey separates the ladder points of a cell (and stages: a
	// warm-up stage uses its own keys), so cold prompts never repeat
	// across points. Warm prompts ignore it.
	PointKey uint64
	// Shard separates the shards of a sharded run (--shard i/n): each
	// draws cold prompts of its own, else the shards would send the same
	// "cold" prompts and the second to arrive would find them cached.
	// Warm prompts and the shared prefix are every shard's. Shard 0
	// draws what an unsharded run draws.
	Shard int
	// Vocab is the calibrated vocabulary; nil means AssumedVocab.
	Vocab *Vocab
	// Dataset, when set, replaces synthetic prompts: request i of pass p
	// takes a dataset entry chosen by a seeded permutation.
	Dataset []string
	// Turns is the most turns of a conversation's session (Turn); each
	// turn's new text is a prompt of its own, the shared prefix opening
	// the first turn only.
	Turns int
	// Conversations, when set, give the sessions their user turns: a
	// session takes a conversation chosen as Dataset prompts are, and
	// sends its human turns in order.
	Conversations [][]string
	// Trace, when set, replaces them too: request i is the trace's
	// request i (Trace.TracePrompt), salted by the point and the pass
	// unless Warm.
	Trace *Trace

	prefix string
	perm   []int
	ready  bool
}

func (p *PromptSource) init() {
	if p.ready {
		return
	}
	p.ready = true
	if p.Vocab == nil {
		p.Vocab = AssumedVocab()
	}
	if p.SharedPrefix > 0 && len(p.Dataset) == 0 {
		rng := rand.New(rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15))
		p.prefix = p.Vocab.Text(rng, p.SharedPrefix)
	}
	if len(p.Dataset) > 0 {
		rng := rand.New(rand.NewPCG(p.Seed, p.CellKey))
		p.perm = rng.Perm(len(p.Dataset))
	}
	if len(p.Conversations) > 0 {
		rng := rand.New(rand.NewPCG(p.Seed, p.CellKey))
		p.perm = rng.Perm(len(p.Conversations))
	}
}

// Prepare builds what later calls share; call it once before using the
// source from several goroutines.
func (p *PromptSource) Prepare() { p.init() }

// Prompt returns request i's prompt in pass pass. It is safe for
// concurrent use after Prepare.
func (p *PromptSource) Prompt(pass, i int) string {
	return p.prompt(pass, i, true)
}

// conversation is the conversation session takes in pass.
func (p *PromptSource) conversation(pass, session int) []string {
	point := p.pointKey()
	if p.Warm {
		pass, point = 0, 0
	}
	k := mix64(point)*0x9e3779b9 + uint64(pass)*1_000_003 + uint64(session)
	return p.Conversations[p.perm[k%uint64(len(p.perm))]]
}

// TurnsOf is how many turns session plans in pass: its conversation's
// human turns (at most Turns when it is set), else Turns.
func (p *PromptSource) TurnsOf(pass, session int) int {
	p.init()
	if len(p.Conversations) == 0 {
		return max(p.Turns, 1)
	}
	n := len(p.conversation(pass, session))
	if p.Turns > 0 {
		n = min(n, p.Turns)
	}
	return n
}

// Turn is the new user text of turn (1-based) of session in pass: the
// conversation's turn-th human message, else a prompt of its own (the
// dataset's or an isl-token synthetic one; the shared prefix opens turn 1
// only, as a system prompt opens a chat). Texts never repeat across
// sessions, turns or passes (cold) unless Warm.
func (p *PromptSource) Turn(pass, session, turn int) string {
	p.init()
	if len(p.Conversations) > 0 {
		c := p.conversation(pass, session)
		return c[min(turn, len(c))-1]
	}
	return p.prompt(pass, session*max(p.Turns, 1)+turn-1, turn == 1)
}

func (p *PromptSource) prompt(pass, i int, withPrefix bool) string {
	p.init()
	if p.Trace != nil {
		return p.tracePrompt(pass, i)
	}
	if p.Warm {
		pass = 0
		if p.WarmSet > 0 {
			i %= p.WarmSet
		}
	}
	point := p.pointKey()
	if p.Warm {
		point = 0
	}
	if len(p.Dataset) > 0 {
		k := mix64(point)*0x9e3779b9 + uint64(pass)*1_000_003 + uint64(i)
		return p.Dataset[p.perm[k%uint64(len(p.perm))]]
	}
	rng := rand.New(rand.NewPCG(p.Seed^p.CellKey, mix64(point)^uint64(pass)<<40^uint64(i)))
	isl := p.ISL
	if p.ISLDist != nil {
		isl = p.ISLDist.Draw(p.drawSeed(islStream), pass, i)
	}
	n := p.Vocab.WordsFor(isl)
	if p.prefix == "" || !withPrefix {
		return p.Vocab.withLead(p.Vocab.Text(rng, n))
	}
	rest := n - p.SharedPrefix
	if rest <= 0 {
		return p.Vocab.withLead(p.prefix)
	}
	return p.Vocab.withLead(p.prefix + " " + p.Vocab.Text(rng, rest))
}

// The streams of a cell's length draws: a request's isl and osl are
// drawn independently.
const (
	islStream = 0x15
	oslStream = 0x05
)

// drawSeed is the seed of a cell's length draws of one stream: the
// ladder's points draw the same lengths for request i of pass p (they
// differ in their load, not their shape), each shard its own.
func (p *PromptSource) drawSeed(stream uint64) uint64 {
	return mix64(p.Seed^p.CellKey^stream<<56) ^ mix64(uint64(p.Shard)+1)
}

// ISLOf is the prompt length request i of pass pass asks for: drawn from
// ISLDist, else ISL.
func (p *PromptSource) ISLOf(pass, i int) int {
	if p.ISLDist == nil {
		return p.ISL
	}
	pass, i = p.warmIndex(pass, i)
	return p.ISLDist.Draw(p.drawSeed(islStream), pass, i)
}

// OSLOf is the output length request i of pass pass asks for: drawn from
// OSLDist, else osl. A warm prompt asks for the same output every time
// it is sent.
func (p *PromptSource) OSLOf(pass, i, osl int) int {
	if p.OSLDist == nil {
		return osl
	}
	pass, i = p.warmIndex(pass, i)
	return p.OSLDist.Draw(p.drawSeed(oslStream), pass, i)
}

// DrawIndex is the pass and index whose prompt request i of pass pass
// sends: a draw made per request keyed by it follows the prompt (a warm
// prompt, reused, draws the same every time).
func (p *PromptSource) DrawIndex(pass, i int) (int, int) { return p.warmIndex(pass, i) }

// warmIndex is the pass and index whose prompt request i of pass pass
// sends: warm prompts are one set, reused.
func (p *PromptSource) warmIndex(pass, i int) (int, int) {
	if !p.Warm {
		return pass, i
	}
	if p.WarmSet > 0 {
		i %= p.WarmSet
	}
	return 0, i
}

// pointKey is PointKey, made the shard's own for shards after the first.
func (p *PromptSource) pointKey() uint64 {
	if p.Shard == 0 {
		return p.PointKey
	}
	return p.PointKey ^ mix64(uint64(p.Shard)<<32|0x5eed)
}

// mix64 is splitmix64's finalizer: distinct keys give unrelated seeds.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// PointKey is a ladder point's key for PromptSource.PointKey: stage
// names the stage (warm-up and sweep differ), and concurrency or rate the
// point.
func PointKey(stage string, concurrency int, rate float64) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(stage); i++ {
		h = (h ^ uint64(stage[i])) * 1099511628211
	}
	h = (h ^ uint64(concurrency)) * 1099511628211
	h = (h ^ math.Float64bits(rate)) * 1099511628211
	return h | 1 // never 0, the warm key
}

// tracePrompt is request i's prompt of a trace replay: cold prompts are
// salted by the point and the pass, so no replay (a warm-up pass, another
// ladder point) warms the prefix cache for another; warm ones are not.
func (p *PromptSource) tracePrompt(pass, i int) string {
	salt := uint64(0)
	if !p.Warm {
		salt = mix64(mix64(p.PointKey) ^ uint64(pass+1))
	}
	return p.Trace.TracePrompt(p.Vocab, p.Seed, salt, i%p.Trace.Len())
}
