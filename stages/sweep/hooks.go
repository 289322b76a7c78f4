package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
)

// Server hooks per cell (the sweep's reset_cache and profile; docs/PLANS.md,
// Server hooks): an empty prefix cache before each timed pass, so a cell
// starts as cold as the first whatever the cells before it sent, and the
// engine's profiler around each timed pass. What was called and its answer
// go to the stage log and the row's notes.

// serverHooks calls the target engine's hooks around a point's timed
// passes.
type serverHooks struct {
	reset, profile bool
	engine         engines.Engine
	t              *loadgen.Target
	log            io.Writer
	id             string
	// calls are what the point's hooks called, in order (the row's note).
	calls []string
}

// hooks are the point's server hooks (nil when the sweep asks for none).
func (r *sweepRun) hooks(t *loadgen.Target, id string) *serverHooks {
	s := r.s
	if !s.cfg.ResetCache && !s.cfg.Profile {
		return nil
	}
	// The launch stage's preset, else what the server said it is.
	name := r.target.Engine
	if name == "" || name == engines.Custom.Name {
		name = r.info.Engine
	}
	e, _ := engines.Lookup(name)
	if e.Name == "" {
		e.Name = name
	}
	return &serverHooks{reset: s.cfg.ResetCache, profile: s.cfg.Profile, engine: e, t: t, log: r.env.Log, id: id}
}

// before runs ahead of a timed pass: the cache reset, then the profiler's
// start. A reset that fails is the point's error (its pass would not be
// cold); a profiler that will not start is said and the pass goes on.
func (h *serverHooks) before(ctx context.Context) error {
	if h == nil {
		return nil
	}
	if h.reset {
		lines, err := loadgen.ResetCache(ctx, h.t, h.engine)
		h.said("reset_cache", lines, err)
		if err != nil {
			return fmt.Errorf("reset_cache: %w: the timed pass would not start with an empty cache", err)
		}
	}
	if h.profile {
		line, err := loadgen.Profile(ctx, h.t, h.engine, true)
		h.said("profile", []string{line}, err)
	}
	return nil
}

// after runs behind a timed pass: the profiler's stop.
func (h *serverHooks) after(ctx context.Context) {
	if h == nil || !h.profile {
		return
	}
	line, err := loadgen.Profile(context.WithoutCancel(ctx), h.t, h.engine, false)
	h.said("profile", []string{line}, err)
}

// said logs a hook's calls and keeps them for the row's note.
func (h *serverHooks) said(hook string, lines []string, err error) {
	var none *loadgen.ErrNoHook
	if errors.As(err, &none) {
		lines = []string{err.Error()}
	}
	for _, l := range lines {
		if l == "" {
			continue
		}
		if h.log != nil {
			fmt.Fprintf(h.log, "%s: %s: %s\n", h.id, hook, l)
		}
		h.calls = append(h.calls, l)
	}
}

// note is the row's note of the hooks called ("" for none).
func (h *serverHooks) note() string {
	if h == nil || len(h.calls) == 0 {
		return ""
	}
	return "server hooks around the timed passes: " + strings.Join(h.calls, "; ")
}

// validateHooks refuses reset_cache and profile on a target whose engine
// is known now (a launch stage's preset) and has no such endpoint; a URL
// target's engine is learned when the sweep runs, and a missing endpoint
// is then the cell's error (reset_cache) or its note (profile).
func (s *Stage) validateHooks(c *pipeline.Check, bad func([]string, string, ...any)) {
	if !s.cfg.ResetCache && !s.cfg.Profile {
		return
	}
	peer, _ := c.Peer(s.cfg.Target)
	named, ok := peer.(pipeline.EngineNamer)
	if !ok || named.EngineName() == "" {
		return
	}
	e, known := engines.Lookup(named.EngineName())
	if !known {
		return
	}
	if s.cfg.ResetCache && e.ResetCachePath == "" && !e.ResetSlots {
		bad([]string{"reset_cache"}, "engine %q has no prefix-cache reset benchrun knows (vLLM's /reset_prefix_cache, SGLang's /flush_cache, llama-server's slot erase): drop reset_cache, or restart the server per cell (restart: \"per_cell\" on stages.%s)", e.Name, s.cfg.Target)
	}
	if s.cfg.Profile && e.ProfileStartPath == "" {
		bad([]string{"profile"}, "engine %q has no profiler endpoint benchrun knows (vLLM's and SGLang's /start_profile and /stop_profile): drop profile", e.Name)
	}
}
