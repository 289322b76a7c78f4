package pipeline

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/benchrun/benchrun/internal/redact"
)

// refPattern is the one form a plan string may reference a value in:
// ${NAME}. Any other $ (a password's "pa$$word$1", a shell's $HOME) is kept
// as written.
var refPattern = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_.]*\}`)

// secretName matches environment variable names that hold credentials.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|credential)`)

// Expand replaces ${NAME} in s from vars, leaving a reference vars does not
// know as written (a later expansion, or the environment, may fill it).
func Expand(s string, vars map[string]string) string {
	return refPattern.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// ExpandEnv replaces ${NAME} in s from vars, then from benchrun's
// environment. A name that is in neither is an error naming it, never a
// silent empty string: a header "Bearer ${UNSET}" sent as "Bearer " fails
// far from its cause. Every stage kind that expands plan strings (headers,
// environment values, commands) uses this one rule.
func ExpandEnv(s string, vars map[string]string) (string, error) {
	var missing []string
	out := refPattern.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := os.LookupEnv(name); ok {
			if secretName.MatchString(name) {
				// A credential handed to a server (vLLM's --api-key
				// ${VLLM_KEY}, HF_TOKEN in a launch env) is masked
				// wherever benchrun writes, like the keys it sends.
				redact.Add(v)
			}
			return v
		}
		missing = append(missing, name)
		return ref
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("${%s} is neither a plan variable nor set in benchrun's environment: export it before running benchrun", strings.Join(missing, "}, ${"))
	}
	return out, nil
}

// ExpandHeaders expands every header value with ExpandEnv; the error names
// the stage and the header.
func ExpandHeaders(stage string, headers map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(headers))
	for k, v := range headers {
		ev, err := ExpandEnv(v, nil)
		if err != nil {
			return nil, fmt.Errorf("stages.%s.headers.%s: %w", stage, k, err)
		}
		out[k] = ev
	}
	redact.Headers(headers, out) // what came from the environment is a secret
	return out, nil
}
