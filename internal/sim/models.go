package sim

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Several served models (Config.Models: a base model and its LoRA
// adapters, say) each have a prompt cache of their own, as vLLM keys its
// prefix cache by adapter, and may each have a speed of their own
// (Config.ModelSpeeds): a mix of them is served as a multi-LoRA server
// serves one, and each model's share of it is known.

// ModelSpeed is one served model's fixed-mode speed.
type ModelSpeed struct {
	TTFT, ITL time.Duration
}

// modelCaches are the prompt caches of the served models after the first
// (whose cache is Server.pcache), made on first use.
type modelCaches struct {
	mu sync.Mutex
	m  map[string]*promptCache
}

// promptCacheFor is the prompt cache of the served model asked for (nil
// when fixed mode has none): the first model's is Server.pcache.
func (s *Server) promptCacheFor(model string) *promptCache {
	if s.pcache == nil || len(s.cfg.Models) < 2 || model == "" || model == s.cfg.Models[0] {
		return s.pcache
	}
	s.mcaches.mu.Lock()
	defer s.mcaches.mu.Unlock()
	c := s.mcaches.m[model]
	if c == nil {
		c = s.pcache.empty()
		if s.mcaches.m == nil {
			s.mcaches.m = map[string]*promptCache{}
		}
		s.mcaches.m[model] = c
	}
	return c
}

// reset empties every model's cache.
func (m *modelCaches) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.m {
		c.reset()
	}
}

// checkModelSpeeds says what is wrong with ModelSpeeds ("" when nothing).
func checkModelSpeeds(c Config) string {
	for name, sp := range c.ModelSpeeds {
		served := false
		for _, m := range c.Models {
			served = served || m == name
		}
		if !served {
			return fmt.Sprintf("model speed for %q, which is not a served model (%v)", name, c.Models)
		}
		if sp.TTFT < 0 || sp.ITL < 0 {
			return fmt.Sprintf("model speed for %q: negative TTFT or ITL", name)
		}
	}
	return ""
}

// empty is a new, empty cache of c's style and size.
func (c *promptCache) empty() *promptCache {
	e := &promptCache{style: c.style, bs: c.bs, max: c.max, maxTok: c.maxTok, hostOn: c.hostOn}
	if c.blocks != nil {
		e.blocks = newPrefixCache(c.blocks.cap)
	}
	return e
}

// ParseModelSpeeds reads `benchrun sim --model-speed`: NAME=TTFT/ITL,
// comma separated ("lora-a=30ms/8ms,lora-b=60ms/12ms"); nil for "".
func ParseModelSpeeds(s string) (map[string]ModelSpeed, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]ModelSpeed{}
	for _, part := range strings.Split(s, ",") {
		name, speed, ok := strings.Cut(strings.TrimSpace(part), "=")
		ttft, itl, ok2 := strings.Cut(speed, "/")
		if !ok || !ok2 || name == "" {
			return nil, fmt.Errorf("%q: want NAME=TTFT/ITL (lora-a=30ms/8ms)", part)
		}
		t, err := time.ParseDuration(ttft)
		if err != nil {
			return nil, fmt.Errorf("%q: TTFT: %w", part, err)
		}
		i, err := time.ParseDuration(itl)
		if err != nil {
			return nil, fmt.Errorf("%q: ITL: %w", part, err)
		}
		out[name] = ModelSpeed{TTFT: t, ITL: i}
	}
	return out, nil
}
