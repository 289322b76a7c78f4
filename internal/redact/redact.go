// Package redact keeps the secrets benchrun sends (API keys, header values
// expanded from the environment, passwords in target URLs) out of
// everything it writes: rows, logs, progress, the manifest, the plan
// copies. Whoever reads a secret registers it (Add); whoever writes text
// passes it through String, Value or a Writer.
//
// The registry is process-wide: a run's stages register what they send,
// and every output of the run redacts it, whichever stage wrote the text.
// Secrets shorter than MinLen are not registered: redacting "a" or "42"
// would rewrite every row (names, numbers, JSON) into nonsense, and a
// credential that short protects nothing anyway.
package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/benchrun/benchrun/internal/redact/internal/registry"
	"github.com/benchrun/benchrun/internal/safetext"
)

// Mask replaces a secret wherever it appears.
const Mask = "[REDACTED]"

// MinLen is the shortest secret registered (see the package comment).
const MinLen = 4

// Add registers a secret: from now on every redacting function replaces
// it (and its JSON-escaped and URL-escaped forms) with Mask. Leading and
// trailing space is ignored; a secret shorter than MinLen, or one that
// Mask itself contains, is not registered.
func Add(secret string) {
	secret = strings.TrimSpace(secret)
	if len(secret) < MinLen || strings.Contains(Mask, secret) {
		return
	}
	forms := []string{secret}
	if b, err := json.Marshal(secret); err == nil {
		if q := string(b[1 : len(b)-1]); q != secret {
			forms = append(forms, q)
		}
	}
	for _, e := range []string{url.QueryEscape(secret), url.PathEscape(secret)} {
		if e != secret {
			forms = append(forms, e)
		}
	}
	registry.Mu.Lock()
	defer registry.Mu.Unlock()
	var cur []string
	if p := registry.Secrets.Load(); p != nil {
		cur = *p
	}
	next := slices.Clone(cur)
	for _, f := range forms {
		if !slices.Contains(next, f) {
			next = append(next, f)
		}
	}
	if len(next) == len(cur) {
		return
	}
	slices.SortStableFunc(next, func(a, b string) int { return len(b) - len(a) })
	registry.Secrets.Store(&next)
}

// Headers registers the header values a stage sends that came from the
// environment: for every header whose sent value differs from the value
// as written (raw), the sent value and the value of each environment
// variable the raw value names as ${NAME}. Literal values, written in the
// plan, are not secrets benchrun can know of.
func Headers(raw, sent map[string]string) {
	for k, v := range sent {
		r, ok := raw[k]
		if ok && r == v {
			continue
		}
		Add(v)
		for _, name := range envRefs(r) {
			Add(os.Getenv(name))
		}
	}
}

// envRefRE is the one reference form plan strings expand (pipeline.ExpandEnv).
var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func envRefs(s string) []string {
	var names []string
	for _, m := range envRefRE.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

func current() []string {
	if p := registry.Secrets.Load(); p != nil {
		return *p
	}
	return nil
}

// Any says whether a secret is registered.
func Any() bool { return len(current()) > 0 }

// WeakLen is the length under which a secret is weak: short enough to be
// an ordinary word ("llama"). A weak secret is masked only where it
// stands as a whole token, so that "sim-llama" stays a model's name; a
// strong one wherever it appears.
const WeakLen = 16

// String returns s with every registered secret replaced by Mask.
func String(s string) string {
	for _, sec := range current() {
		if strings.Contains(s, sec) {
			s = replace(s, sec)
		}
	}
	return s
}

// replace masks sec in s: everywhere, or, for a weak secret, where no
// token character (letter, digit, - _ .) touches it.
func replace(s, sec string) string {
	if len(sec) >= WeakLen {
		return strings.ReplaceAll(s, sec, Mask)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, sec)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(sec)
		whole := (i == 0 || !tokenByte(s[i-1])) && (end == len(s) || !tokenByte(s[end]))
		b.WriteString(s[:i])
		if whole {
			b.WriteString(Mask)
		} else {
			b.WriteString(sec)
		}
		s = s[end:]
	}
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// Bytes returns b with every registered secret replaced by Mask (b itself
// when none appears).
func Bytes(b []byte) []byte {
	for _, sec := range current() {
		if strings.Contains(string(b), sec) {
			b = []byte(replace(string(b), sec))
		}
	}
	return b
}

// Contains reports whether s holds a registered secret (as String would
// mask it).
func Contains(s string) bool {
	for _, sec := range current() {
		if strings.Contains(s, sec) && replace(s, sec) != s {
			return true
		}
	}
	return false
}

// Weak lists the lengths of the registered secrets shorter than WeakLen
// (their JSON- and URL-escaped forms aside), for a warning: such a key is
// guessable, and masking it is limited to whole tokens.
func Weak() []int {
	var out []int
	for _, sec := range current() {
		if len(sec) < WeakLen {
			out = append(out, len(sec))
		}
	}
	return out
}

// URLPassword is what a password in a URL's userinfo becomes.
const URLPassword = "xxxxx"

// userinfoRE matches the userinfo of a URL in text: scheme://user:password@.
var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@"'\x60<>]*:)([^/\s@"'\x60<>]+)@`)

// URLs returns s with the password of every URL in it (scheme://user:pass@host)
// replaced by URLPassword, and registered secrets masked.
func URLs(s string) string {
	return String(userinfoRE.ReplaceAllString(s, "${1}"+URLPassword+"@"))
}

// URLSecrets registers the password of every URL in s (and the whole
// userinfo), so that any text that repeats it is redacted.
func URLSecrets(s string) {
	for _, m := range userinfoRE.FindAllStringSubmatch(s, -1) {
		pass := m[2]
		if p, err := url.PathUnescape(pass); err == nil {
			Add(p)
		}
		Add(pass)
	}
}

// Writer redacts what goes through it to w. A secret split across two
// writes is still caught: the end of a write that could begin a secret is
// held back until the next write shows whether it does, or until Flush.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
}

// NewWriter returns a redacting writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// File is the file the writer writes to, when it is one: a live view asks
// it whether it draws on a terminal, and keeps writing through the Writer.
func (rw *Writer) File() (*os.File, bool) {
	f, ok := rw.w.(*os.File)
	return f, ok
}

// Write redacts p and writes it (less any held-back tail). It reports
// len(p) written when the underlying write succeeds.
func (rw *Writer) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	secs := current()
	if len(secs) == 0 && len(rw.pending) == 0 {
		if _, err := rw.w.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	buf := append(rw.pending, p...)
	rw.pending = nil
	out := []byte(String(string(buf)))
	if hold := heldTail(out, secs); hold > 0 {
		rw.pending = slices.Clone(out[len(out)-hold:])
		out = out[:len(out)-hold]
	}
	if len(out) > 0 {
		if _, err := rw.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back.
func (rw *Writer) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.pending) == 0 {
		return nil
	}
	out := []byte(String(string(rw.pending)))
	rw.pending = nil
	_, err := rw.w.Write(out)
	return err
}

// heldTail is the length of the longest end of b that is a proper prefix
// of a secret.
func heldTail(b []byte, secs []string) int {
	best := 0
	for _, sec := range secs {
		for n := min(len(sec)-1, len(b)); n > best; n-- {
			if string(b[len(b)-n:]) == sec[:n] {
				best = n
				break
			}
		}
	}
	return best
}

// Value returns v ready to be written: every string in it made safe
// (internal/safetext: valid UTF-8, control characters escaped) and every
// registered secret masked. v itself is never modified; what changes is
// copied.
func Value[T any](v T) T {
	if len(current()) == 0 {
		return safetext.Value(v)
	}
	return safetext.Map(v, func(s string) string { return String(safetext.String(s)) })
}
