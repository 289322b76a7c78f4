package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/safetext"
)

// Server hooks: what a sweep asks of the engine around a timed pass,
// through the engine's own endpoints (engines.Engine's ResetCachePath,
// ResetSlots and profiler paths): an empty prefix cache before it, its
// profiler around it. Each call is said as "METHOD path → status answer",
// for the stage log.

// hookTimeout bounds one hook call: a cache flush or a profiler start
// waits for the engine, never for long.
const hookTimeout = 30 * time.Second

// ErrNoHook is a hook the engine has no endpoint for.
type ErrNoHook struct{ Engine, Hook string }

func (e *ErrNoHook) Error() string {
	return fmt.Sprintf("engine %q has no %s endpoint benchrun knows", e.Engine, e.Hook)
}

// ResetCache empties the engine's prefix cache: one POST to its reset
// path, or (llama-server) an erase of every slot /slots lists. It returns
// the calls made and their answers, one per line; an error when the
// engine has no reset or a call failed (a 4xx or 5xx: SGLang's 400 while
// requests run, vLLM's 404 outside dev mode, llama-server's 501 without
// --slot-save-path).
func ResetCache(ctx context.Context, t *Target, e engines.Engine) ([]string, error) {
	switch {
	case e.ResetSlots && e.SlotsPath != "":
		return resetSlots(ctx, t, e.SlotsPath)
	case e.ResetCachePath != "":
		line, err := t.hookCall(ctx, http.MethodPost, e.ResetCachePath)
		return []string{line}, err
	}
	return nil, &ErrNoHook{Engine: e.Name, Hook: "prefix-cache reset"}
}

// resetSlots erases every slot llama-server lists: GET /slots (an array
// of slots with their "id"), then POST /slots/{id}?action=erase, which
// answers {"id_slot", "n_erased"}.
func resetSlots(ctx context.Context, t *Target, path string) ([]string, error) {
	var slots []struct {
		ID int `json:"id"`
	}
	line, body, err := t.hookExchange(ctx, http.MethodGet, path)
	lines := []string{line}
	if err != nil {
		return lines, err
	}
	if err := json.Unmarshal(body, &slots); err != nil {
		return lines, fmt.Errorf("GET %s: not a list of slots: %w", path, err)
	}
	for _, s := range slots {
		l, err := t.hookCall(ctx, http.MethodPost, path+"/"+strconv.Itoa(s.ID)+"?action=erase")
		lines = append(lines, l)
		if err != nil {
			return lines, err
		}
	}
	return lines, nil
}

// Profile starts (start true) or stops the engine's profiler.
func Profile(ctx context.Context, t *Target, e engines.Engine, start bool) (string, error) {
	path := e.ProfileStopPath
	if start {
		path = e.ProfileStartPath
	}
	if path == "" {
		return "", &ErrNoHook{Engine: e.Name, Hook: "profiler"}
	}
	return t.hookCall(ctx, http.MethodPost, path)
}

// hookCall is hookExchange for the line alone.
func (t *Target) hookCall(ctx context.Context, method, path string) (string, error) {
	line, _, err := t.hookExchange(ctx, method, path)
	return line, err
}

// hookExchange makes one hook call with the target's credentials: its
// line ("POST /reset_prefix_cache → 200 (no body)"), the answer's body
// (at most 64 KiB) and an error for a failed call or a 4xx or 5xx.
func (t *Target) hookExchange(ctx context.Context, method, path string) (string, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(t.BaseURL, "/")+path, nil)
	if err != nil {
		return method + " " + path + " → " + err.Error(), nil, err
	}
	t.setAuth(req)
	client := t.HTTP
	if client == nil {
		client = httpsafe.Client
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Sprintf("%s %s → %v", method, path, err), nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	answer := "(no body)"
	if s := strings.TrimSpace(string(body)); s != "" {
		answer = strings.Join(strings.Fields(safetext.String(s)), " ")
		if r := []rune(answer); len(r) > 200 {
			answer = string(r[:200]) + "…"
		}
	}
	line := fmt.Sprintf("%s %s → %d %s", method, path, resp.StatusCode, answer)
	if resp.StatusCode/100 != 2 {
		return line, body, fmt.Errorf("%s %s: %w", method, path, &HTTPError{Status: resp.StatusCode, Body: errorMessage(body)})
	}
	return line, body, nil
}
