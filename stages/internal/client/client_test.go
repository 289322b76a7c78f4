package client

import (
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/schema"
)

func TestNewTarget(t *testing.T) {
	t.Setenv("CLIENT_TEST_KEY", "k3y-for-the-client-test")
	t.Setenv("CLIENT_TEST_ORG", "acme")
	r := RequestConfig{
		Config:       Config{Headers: map[string]string{"X-Org": "${CLIENT_TEST_ORG}"}, APIKeyEnv: "CLIENT_TEST_KEY"},
		Body:         map[string]any{"temperature": 0},
		StallTimeout: "5s",
	}
	tg, err := r.NewTarget("sweep", "http://127.0.0.1:9", "m", loadgen.Endpoint("chat"), true, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.HTTP.CloseIdleConnections()
	if tg.Headers["X-Org"] != "acme" || tg.APIKey != "k3y-for-the-client-test" || tg.ExtraBody["temperature"] != 0 ||
		tg.StallTimeout != 5*time.Second || tg.BaseURL != "http://127.0.0.1:9" || tg.Model != "m" || !tg.Stream {
		t.Errorf("target %+v: want the expanded header, the key, the body field and a 5s stall timeout", tg)
	}
	// The body is the target's own: a kind that adds fields does not
	// write into the plan's configuration.
	tg.ExtraBody["dimensions"] = 8
	if _, ok := r.Body["dimensions"]; ok {
		t.Error("the target's body is the plan's map")
	}
	if d := (RequestConfig{}).Stall(); d != 2*time.Minute {
		t.Errorf("default stall timeout %s, want the schema's 2m", d)
	}
	r.APIKeyEnv = "CLIENT_TEST_UNSET"
	if _, err := r.NewTarget("sweep", "http://127.0.0.1:9", "m", loadgen.Endpoint("chat"), true, 1); err == nil ||
		!strings.Contains(err.Error(), "stages.sweep.api_key_env: the environment variable CLIENT_TEST_UNSET is empty or not set") {
		t.Errorf("an unset key variable: err %v, want it named at the field", err)
	}
}

func TestCheck(t *testing.T) {
	spec := &schema.Stage{Name: "s"}
	for _, c := range []struct {
		cfg  RequestConfig
		want string // "" when valid
	}{
		{RequestConfig{StallTimeout: "2m", Config: Config{APIKeyEnv: "OPENAI_API_KEY"}}, ""},
		{RequestConfig{}, ""},
		{RequestConfig{Config: Config{APIKeyEnv: "sk-abc def"}}, `stages.s.api_key_env: "sk-abc def" should name an environment variable`},
		{RequestConfig{Config: Config{APIKeyEnv: "KEY=sk"}}, `should name an environment variable`},
		{RequestConfig{StallTimeout: "soon"}, `stages.s.stall_timeout: "soon" is not a positive duration`},
		{RequestConfig{StallTimeout: "0s"}, `"0s" is not a positive duration`},
		{RequestConfig{StallTimeout: "3000000h"}, `"3000000h" is longer than any run`},
	} {
		errs := c.cfg.Check(spec)
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%+v: %v, want valid", c.cfg, errs)
		case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Msg, c.want)):
			t.Errorf("%+v: %v, want %q", c.cfg, errs, c.want)
		}
	}
}
