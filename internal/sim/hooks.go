package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
)

// The engines' server hooks as each persona serves them, what a sweep's
// reset_cache and profile call (internal/engines holds the client's side):
//
//   - vLLM (and the generic persona): POST /reset_prefix_cache, POST
//     /start_profile and /stop_profile, each 200 with no body
//     (vllm/entrypoints/serve/cache/api_router.py, profile/api_router.py;
//     the real server serves them only with VLLM_SERVER_DEV_MODE=1 and a
//     profiler directory, the simulator always);
//   - SGLang: /flush_cache (already served, persona_sglang.go) and GET or
//     POST /start_profile, /stop_profile, answered in plain text;
//   - llama-server: POST /slots/{id}?action=erase, {"id_slot", "n_erased"}:
//     the slot's prompt leaves the cache, its host-memory copies stay (as
//     llama.cpp's server_prompt_cache keeps them);
//   - Ollama: none.

// hookCounts are the hooks the server was called on: the ground truth a
// test checks the sweep's calls against.
type hookCounts struct {
	resets, erases, profileStarts, profileStops atomic.Int64
	profiling                                   atomic.Bool
}

// Hooks is what the server's hooks were called for: prefix-cache resets
// (vLLM's and SGLang's), slot erases (llama-server's), profiler starts
// and stops.
type Hooks struct {
	Resets, Erases, ProfileStarts, ProfileStops int
}

// Hooks returns how often each hook was called.
func (s *Server) Hooks() Hooks {
	h := &s.hooks
	return Hooks{Resets: int(h.resets.Load()), Erases: int(h.erases.Load()),
		ProfileStarts: int(h.profileStarts.Load()), ProfileStops: int(h.profileStops.Load())}
}

// vllmHookRoutes serves vLLM's cache reset and profiler.
func (s *Server) vllmHookRoutes() {
	s.mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, r *http.Request) {
		s.hooks.resets.Add(1)
		s.flushPromptCache()
		w.WriteHeader(http.StatusOK)
	})
	s.mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) {
		s.startProfile()
		w.WriteHeader(http.StatusOK)
	})
	s.mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, r *http.Request) {
		s.stopProfile()
		w.WriteHeader(http.StatusOK)
	})
}

// sglangProfileRoutes serves SGLang's profiler (python/sglang/srt/
// entrypoints/http_server.py: GET or POST, plain-text answers).
func (s *Server) sglangProfileRoutes() {
	start := func(w http.ResponseWriter, r *http.Request) {
		s.startProfile()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("Start profiling.\n"))
	}
	stop := func(w http.ResponseWriter, r *http.Request) {
		s.stopProfile()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("Stop profiling. This will take some time.\n"))
	}
	for _, m := range []string{"GET", "POST"} {
		s.mux.HandleFunc(m+" /start_profile", start)
		s.mux.HandleFunc(m+" /stop_profile", stop)
	}
}

func (s *Server) startProfile() {
	s.hooks.profileStarts.Add(1)
	s.hooks.profiling.Store(true)
}

func (s *Server) stopProfile() {
	s.hooks.profileStops.Add(1)
	s.hooks.profiling.Store(false)
}

// handleSlotAction is llama-server's POST /slots/{id}?action=...: erase
// empties one slot's cached prompt; save and restore (which need
// --slot-save-path) are not simulated.
func (s *Server) handleSlotAction(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 0 || id >= s.slots() {
		s.writeErr(w, http.StatusBadRequest, "invalid_request_error", "Invalid slot ID")
		return
	}
	if a := r.URL.Query().Get("action"); a != "erase" {
		s.writeErr(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("Invalid action: %q (the simulator erases slots only)", a))
		return
	}
	s.hooks.erases.Add(1)
	n := 0
	if s.pcache != nil {
		n = s.pcache.eraseSlot()
	}
	writeRawJSON(w, http.StatusOK, map[string]any{"id_slot": id, "n_erased": n})
}
