package launch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/benchrun/benchrun/internal/engines"
)

// ready is the quick readiness check a per-cell restart waits for: the
// engine's health path answers 200 and its model list has the model.
// (The health stage does the full check, with reasons, once.)
func ready(ctx context.Context, client *http.Client, base string, eng engines.Engine, model string) bool {
	code, _ := get(ctx, client, base+eng.HealthPath)
	if code != http.StatusOK {
		return false
	}
	code, body := get(ctx, client, base+eng.ModelsPath)
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		// The model list wants credentials (vLLM --api-key), which the
		// health stage has and a restart does not: the server answers,
		// and the health stage already proved it serves the model.
		return true
	}
	if code != http.StatusOK {
		return false
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return false
	}
	for _, m := range list.Data {
		if model == "" || eng.Serves(m.ID, model) {
			return true
		}
	}
	return false
}

func get(ctx context.Context, client *http.Client, url string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b
}
