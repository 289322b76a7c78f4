package sim

import (
	"sync"
	"time"
)

// promptCache is fixed mode's prompt cache (engine mode has the engine's
// block cache). Its style follows the personality:
//
//   - blocks (vllm, generic with --prompt-cache): vLLM's automatic prefix
//     caching, whole blocks of Engine.BlockSize tokens, chained hashes, an
//     LRU of KVCacheTokens/BlockSize blocks; at most the blocks within the
//     first P-1 tokens hit, as vLLM always computes the last token;
//   - slots (llama-server, ollama): cache_prompt: each of Slots slots keeps
//     the last prompt it served; a request takes the slot with the longest
//     common prefix (token level), or the least recently used one, and
//     reuses that prefix. llama-server (current builds: tools/server's
//     server_prompt_cache, --cache-ram, 8 GiB by default) also saves a
//     slot's prompt to host memory when another request takes the slot,
//     and loads the saved prompt sharing the longest prefix with a new one
//     when it beats the slot's own: prompts served long before are found
//     again (a confirmation that re-sent them read 1,016 of 1,024 prompt
//     tokens cached). Here the host cache holds up to KVCacheTokens tokens
//     of saved prompts, oldest dropped first;
//   - radix (sglang): RadixAttention: the longest token-level prefix shared
//     with any recent prompt, up to KVCacheTokens tokens kept.
//
// At least one prompt token is always computed.
type promptCache struct {
	mu      sync.Mutex
	style   int
	bs      int
	blocks  *prefixCache
	entries [][]int // slots and radix: most recently used first
	max     int     // slots: entries kept
	maxTok  int     // radix: tokens kept; slots: host cache tokens kept
	tok     int
	// host is llama-server's host-memory prompt cache (slots style; nil
	// without one): saved prompts, most recent first, hostTok tokens.
	host    [][]int
	hostOn  bool
	hostTok int
}

const (
	cacheBlocks = iota
	cacheSlots
	cacheRadix
)

// newPromptCache returns nil when fixed mode has no prompt cache.
func newPromptCache(cfg Config, personality string) *promptCache {
	if !cfg.PromptCache || cfg.Mode != ModeFixed {
		return nil
	}
	bs := cfg.Engine.BlockSize
	if bs <= 0 {
		bs = DefaultEngine().BlockSize
	}
	kv := cfg.Engine.KVCacheTokens
	if kv <= 0 {
		kv = DefaultEngine().KVCacheTokens
	}
	c := &promptCache{bs: bs, max: max(cfg.Slots, 1), maxTok: kv}
	p := personaOf(personality)
	c.style, c.hostOn = p.cache, p.hostCache
	if c.style == cacheBlocks {
		c.blocks = newPrefixCache(max(kv/bs, 1))
	}
	return c
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// use returns how many leading tokens of ids are cached and records ids as
// computed (a request's prompt is in the cache from its start on). The
// entry it returns is what keep extends once the answer is generated.
func (c *promptCache) use(ids []int) (int, []int) {
	if len(ids) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.style {
	case cacheBlocks:
		hit := c.blocks.lookup(blockHashes(ids[:len(ids)-1], c.bs)) * c.bs
		c.blocks.insert(blockHashes(ids, c.bs))
		return hit, nil
	case cacheSlots:
		// llama-server's slot choice: the slot whose prompt shares more than
		// half of this one (slot_prompt_similarity 0.5), else a free slot,
		// else the least recently used; the chosen slot's common prefix is
		// reused and the slot then holds this prompt.
		best, bestLen := -1, 0
		for i, e := range c.entries {
			if n := commonPrefix(e, ids); n > bestLen {
				best, bestLen = i, n
			}
		}
		chosen := best
		if best < 0 || 2*bestLen <= len(ids) {
			chosen = -1
			if len(c.entries) >= c.max {
				chosen = len(c.entries) - 1
			}
		}
		hit := 0
		if chosen >= 0 {
			hit = commonPrefix(c.entries[chosen], ids)
			if hit < len(c.entries[chosen]) {
				c.save(c.entries[chosen]) // the slot's prompt goes to host memory
			}
			copy(c.entries[1:chosen+1], c.entries[:chosen])
		} else {
			c.entries = append(c.entries, nil)
			copy(c.entries[1:], c.entries[:len(c.entries)-1])
		}
		hit = max(hit, c.load(ids))
		c.entries[0] = append([]int(nil), ids...)
		return min(hit, len(ids)-1), c.entries[0]
	default: // radix
		hit := 0
		for _, e := range c.entries {
			hit = max(hit, commonPrefix(e, ids))
		}
		entry := append([]int(nil), ids...)
		c.radixInsert(entry)
		return min(hit, len(ids)-1), entry
	}
}

// save keeps a slot's prompt in the host cache (llama-server), dropping
// the oldest beyond its token budget.
func (c *promptCache) save(e []int) {
	if !c.hostOn || len(e) == 0 {
		return
	}
	c.host = append([][]int{e}, c.host...)
	c.hostTok += len(e)
	c.host, c.hostTok = dropOldest(c.host, c.hostTok, c.maxTok)
}

// dropOldest drops the last (oldest) entries while they hold more than
// max tokens in all, keeping one; it returns the entries and their tokens.
func dropOldest(entries [][]int, tok, max int) ([][]int, int) {
	for len(entries) > 1 && tok > max {
		last := len(entries) - 1
		tok -= len(entries[last])
		entries[last] = nil
		entries = entries[:last]
	}
	return entries, tok
}

// load is the longest prefix of ids a saved prompt holds (0 without a
// host cache).
func (c *promptCache) load(ids []int) int {
	best := 0
	for _, e := range c.host {
		best = max(best, commonPrefix(e, ids))
	}
	return best
}

// radixInsert puts entry first, dropping the entries it extends and the
// oldest beyond the token budget.
func (c *promptCache) radixInsert(entry []int) {
	kept := c.entries[:0]
	for _, e := range c.entries {
		if commonPrefix(e, entry) == len(e) { // a prefix of entry: entry covers it
			c.tok -= len(e)
			continue
		}
		kept = append(kept, e)
	}
	clear(c.entries[len(kept):])
	c.entries = append([][]int{entry}, kept...)
	c.tok += len(entry)
	c.entries, c.tok = dropOldest(c.entries, c.tok, c.maxTok)
}

// keep records a finished request's KV: its prompt and every generated
// token but the last (which is sampled, never fed back), as the engines
// keep them: vLLM's blocks fill with the output too, a llama-server slot
// holds the conversation it served, SGLang's radix tree caches a finished
// request's input and output. A conversation's next turn, whose prompt
// starts with this prompt and answer, then finds all of it cached.
// entry is what use returned for the prompt.
func (c *promptCache) keep(entry []int, prompt, output []int) {
	if len(output) < 2 {
		return // nothing beyond the prompt was computed
	}
	full := make([]int, 0, len(prompt)+len(output)-1)
	full = append(append(full, prompt...), output[:len(output)-1]...)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.style {
	case cacheBlocks:
		c.blocks.insert(blockHashes(full, c.bs))
	case cacheSlots:
		// The slot still holding this prompt holds the answer too; one
		// another request took meanwhile is that request's now.
		for i, e := range c.entries {
			if len(e) > 0 && len(entry) > 0 && &e[0] == &entry[0] {
				c.entries[i] = full
				return
			}
		}
	default:
		c.radixInsert(full)
	}
}

func (c *promptCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries, c.tok = nil, 0
	c.host, c.hostTok = nil, 0
	if c.blocks != nil {
		c.blocks = newPrefixCache(c.blocks.cap)
	}
}

// eraseSlot empties one slot (llama-server's slot erase): the least
// recently used prompt the slots hold leaves the cache, the host cache's
// copies stay. It returns the tokens erased.
func (c *promptCache) eraseSlot() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.style != cacheSlots || len(c.entries) == 0 {
		return 0
	}
	last := len(c.entries) - 1
	n := len(c.entries[last])
	c.entries = c.entries[:last]
	return n
}

// minCachedTTFT floors the TTFT of a (nearly) fully cached prompt: a real
// engine still runs one forward pass and samples.
const minCachedTTFT = time.Millisecond

// cachedTTFT is fixed mode's TTFT for a prompt of p tokens with cached of
// them in the prompt cache: ttft * (p-cached)/p, floored at
// min(ttft, minCachedTTFT).
func cachedTTFT(ttft time.Duration, p, cached int) time.Duration {
	if cached <= 0 || p <= 0 {
		return ttft
	}
	t := time.Duration(float64(ttft) * float64(p-cached) / float64(p))
	return max(t, min(ttft, minCachedTTFT))
}
