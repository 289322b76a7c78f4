package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// llama.cpp dropped its KV-cache gauges from /metrics (PRs #13660,
// #22879); its /slots endpoint (on unless --no-slots) lists each slot's
// context size and whether it is processing. KV usage is the slots' used
// context over their total context. A busy slot's used tokens are its
// n_past where the build reports it; else its n_prompt_tokens, which
// current builds (tools/server/server-context.cpp, server_slot::to_json)
// set to prompt.tokens.size(): the slot's whole sequence, every sampled
// token appended to it, so next_token.n_decoded is already in it (adding
// it read 0.50 where the truth was about 0.28); else the prompt tokens
// computed and reused (n_prompt_tokens_processed + n_prompt_tokens_cache)
// plus next_token.n_decoded. A busy slot that reports none of these
// counts its whole n_ctx (the most it can hold), and the note says the
// result is an upper bound.

// llamaSlot is the part of a /slots entry read.
type llamaSlot struct {
	NCtx         float64        `json:"n_ctx"`
	IsProcessing bool           `json:"is_processing"`
	NPast        *float64       `json:"n_past"`
	NPrompt      *float64       `json:"n_prompt_tokens"`
	NPromptDone  *float64       `json:"n_prompt_tokens_processed"`
	NPromptCache *float64       `json:"n_prompt_tokens_cache"`
	NextToken    *slotNextToken `json:"next_token"`
}

// slotNextToken is a slot's next_token: an object in llama.cpp builds to
// 2025, an array of one object per sequence in current ones (the first is
// read).
type slotNextToken struct {
	NDecoded *float64 `json:"n_decoded"`
}

func (n *slotNextToken) UnmarshalJSON(b []byte) error {
	type plain slotNextToken
	var one plain
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '[' {
		var many []plain
		if err := json.Unmarshal(trimmed, &many); err != nil {
			return err
		}
		if len(many) > 0 {
			one = many[0]
		}
	} else if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*n = slotNextToken(one)
	return nil
}

// errSlotsShape marks a /slots answer that is not a list of slots.
var errSlotsShape = errors.New("not a list of slots")

// fetchSlots reads /slots and returns the KV usage (0..1) and whether it
// counted busy slots whole. A non-200 answer or an unreadable body turns
// /slots off for the probe's life (slotsOff); a timeout does not.
func (p *promProbe) fetchSlots(ctx context.Context) (kv float64, busyWhole bool, err error) {
	body, err := p.get(ctx, p.slotsURL)
	if err != nil {
		if ctx.Err() == nil {
			p.setSlotsOff(fmt.Sprintf("not readable (%v; llama-server --no-slots?)", err))
		}
		return 0, false, fmt.Errorf("/slots: %w", err)
	}
	defer body.Close()
	var slots []llamaSlot
	if err := json.NewDecoder(io.LimitReader(body, promBodyLimit)).Decode(&slots); err != nil {
		if ctx.Err() == nil {
			p.setSlotsOff(fmt.Sprintf("not readable (%v)", err))
		}
		return 0, false, fmt.Errorf("/slots: %w: %w", errSlotsShape, err)
	}
	kv, busyWhole, ok := slotsUsage(slots)
	if !ok {
		p.setSlotsOff("reports no context sizes")
		return 0, false, fmt.Errorf("/slots: %w: no n_ctx", errSlotsShape)
	}
	return kv, busyWhole, nil
}

func (p *promProbe) setSlotsOff(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slotsOff == "" {
		p.slotsOff = why
	}
}

// slotsUsage is used/total context over the slots (ok false when no slot
// reports a context size).
func slotsUsage(slots []llamaSlot) (kv float64, busyWhole, ok bool) {
	var used, total float64
	for _, s := range slots {
		if s.NCtx <= 0 {
			continue
		}
		total += s.NCtx
		n, known := slotTokens(s)
		switch {
		case known:
			used += min(n, s.NCtx)
		case s.IsProcessing:
			used += s.NCtx
			busyWhole = true
		}
	}
	if total == 0 {
		return 0, false, false
	}
	return used / total, busyWhole, true
}

// slotTokens is a slot's used context when the slot reports it.
func slotTokens(s llamaSlot) (float64, bool) {
	// An idle slot may keep its last prompt for reuse, but no sequence
	// holds it: it is free for the next request, so it is not counted.
	if !s.IsProcessing {
		return 0, true
	}
	if s.NPast != nil {
		return *s.NPast, true
	}
	if s.NPrompt != nil {
		return *s.NPrompt, true // the decoded tokens are in it
	}
	if s.NPromptDone == nil {
		return 0, false
	}
	n := *s.NPromptDone
	if s.NPromptCache != nil {
		n += *s.NPromptCache
	}
	if s.NextToken != nil && s.NextToken.NDecoded != nil {
		n += *s.NextToken.NDecoded
	}
	return n, true
}
