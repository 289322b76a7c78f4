// Package webhook POSTs a run's results to a URL when the run ends: the
// document result.json holds (payload "result", built by sinks/jsonsink's own
// functions from the same calls, so the two never differ) or a short
// summary with the failed verdicts (payload "summary") that chat hooks can
// show. It is a remote sink (pipeline.SinkKind.Remote): it writes nothing
// in the run directory, and `benchrun post RUN_DIR` can send again what a
// run measured.
//
// Secrets: `${NAME}` in the url and in header values is expanded at Start
// with pipeline.ExpandEnv, and every value that came from the environment
// is registered with internal/redact, so that it is masked in errors,
// progress lines, the dry-run output and the body itself. The manifest
// records the entry as the plan wrote it (the `${NAME}` form), since New
// only decodes.
package webhook

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
)

// What this sink implements, checked by the compiler (the runner finds
// the optional interfaces by type assertion, so a renamed method would
// silently drop the capability).
var (
	_ pipeline.Sink        = (*Sink)(nil)
	_ pipeline.VerdictSink = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Payloads.
const (
	PayloadResult  = "result"
	PayloadSummary = "summary"
)

// DefaultTimeout bounds each try when neither the plan nor the recorded
// configuration says (the schema's default is the same).
const DefaultTimeout = 10 * time.Second

const kindName = "webhook"

// Kind registers the sink. It is neither default nor durable: a plan
// lists it, and it sends the results off the machine (Remote).
var Kind = pipeline.SinkKind{
	Name:   kindName,
	Doc:    "POST result.json's document or a summary with the failed verdicts to a URL at the end of a run (Slack, Discord, CI hooks); ${NAME} from the environment, masked",
	Schema: schema.KindSchema{Def: "#Webhook", Source: schemaSource},
	Remote: true,
	Writes: "the webhook POST",
	Flags:  []string{"url", "dry_run"},
	New:    New,
}

// config is a plan entry's fields beside #SinkBase's.
type config struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Timeout string            `json:"timeout"`
	Payload string            `json:"payload"`
	DryRun  bool              `json:"dry_run"`
}

// New decodes an entry. It reads neither the environment nor the network
// (vet calls it): `${NAME}` is expanded at Start, so that vet passes on a
// machine without the secret and the manifest keeps the reference.
func New(spec pipeline.SinkSpec) (pipeline.Sink, error) {
	var cfg config
	if err := spec.Decode(&cfg); err != nil {
		return nil, err
	}
	o := &Sink{name: spec.Name, rawURL: strings.TrimSpace(cfg.URL), rawHeaders: cfg.Headers, payload: cfg.Payload, dryRun: cfg.DryRun, timeout: DefaultTimeout}
	if o.name == "" {
		o.name = kindName
	}
	if o.rawURL == "" {
		return nil, spec.ErrorAt("url", errors.New(`empty: give the receiver's URL, or name the variable that holds it (url: "${SLACK_WEBHOOK_URL}")`))
	}
	// A URL without references can be checked now; one with references
	// is checked at Start, once expanded.
	if !strings.Contains(o.rawURL, "${") {
		if err := checkURL(o.rawURL); err != nil {
			return nil, spec.ErrorAt("url", err)
		}
	}
	if cfg.Timeout != "" {
		d, err := time.ParseDuration(cfg.Timeout)
		if err != nil {
			return nil, spec.ErrorAt("timeout", fmt.Errorf("%q: want a duration such as \"10s\": %w", cfg.Timeout, err))
		}
		if d <= 0 {
			return nil, spec.ErrorAt("timeout", fmt.Errorf("%q: want more than 0 (the longest wait for the receiver's answer, such as \"10s\")", cfg.Timeout))
		}
		o.timeout = d
	}
	switch o.payload {
	case "":
		o.payload = PayloadResult
	case PayloadResult, PayloadSummary:
	default:
		return nil, spec.ErrorAt("payload", fmt.Errorf("%q: want %q (result.json's document) or %q (the outcome and the failed verdicts)", o.payload, PayloadResult, PayloadSummary))
	}
	for name := range cfg.Headers {
		if !validHeaderName(name) {
			return nil, spec.ErrorAt("headers", fmt.Errorf("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name))
		}
	}
	return o, nil
}

// checkURL accepts an absolute http(s) URL. Its errors never quote the
// URL: it may hold a secret (the caller masks what it shows).
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error's text repeats the URL
		}
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an http:// or https:// URL with a host")
	}
	return nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110), the
// check net/http makes when sending; made here so vet finds it.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("!#$%&'*+-.^_`|~", c):
		default:
			return false
		}
	}
	return true
}

// Sink is a webhook sink: it gathers the rows as the json sink does and
// POSTs once, at Stop.
type Sink struct {
	name       string
	rawURL     string
	rawHeaders map[string]string
	payload    string
	dryRun     bool
	timeout    time.Duration

	// Set at Start.
	env      *pipeline.SinkEnv
	url      string            // expanded
	shownURL string            // what messages show: secrets masked
	hideHost string            // the URL's host when it came from the environment
	headers  map[string]string // expanded
	shown    map[string]string // header values as messages show them
	client   *http.Client

	cells    []resultdoc.CellResult
	verdicts []results.Verdict
}

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return o.name }

// Start expands the url and the headers (an unset variable is an error
// naming it, before anything is measured), registers what came from the
// environment as secrets, and, for a resumed run, seeds the rows with
// what its earlier attempts stored, as the json sink does.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	o.env = env
	u, err := pipeline.ExpandEnv(o.rawURL, nil)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	// The same rule as a stage's headers: the expanded value and each
	// variable's value are secrets (redact.Headers compares raw and sent).
	redact.Headers(map[string]string{"url": o.rawURL}, map[string]string{"url": u})
	redact.URLSecrets(u) // a password written in the URL itself
	o.url, o.shownURL = u, shown(o.rawURL, u)
	if err := checkURL(u); err != nil {
		return fmt.Errorf("url %s: %w", o.shownURL, err)
	}
	if parsed, _ := url.Parse(u); !strings.Contains(o.rawURL, parsed.Host) {
		o.hideHost = parsed.Host // a dial error quotes host:port
	}
	o.headers, o.shown = map[string]string{}, map[string]string{}
	for name, raw := range o.rawHeaders {
		v, err := pipeline.ExpandEnv(raw, nil)
		if err != nil {
			return fmt.Errorf("headers.%s: %w", name, err)
		}
		o.headers[name] = v
	}
	redact.Headers(o.rawHeaders, o.headers)
	for name, v := range o.headers {
		o.shown[name] = shown(o.rawHeaders[name], v)
	}
	o.client = &http.Client{Timeout: o.timeout, CheckRedirect: httpsafe.NoRedirects}

	o.cells, o.verdicts = nil, nil
	prior, err := env.Prior()
	if err != nil {
		return fmt.Errorf("the earlier attempts' rows: %w", err)
	}
	if prior != nil && len(prior.Cells) > 0 {
		latest := results.LatestCells(prior.Cells)
		for _, c := range latest { // the requests of each row's own attempt, read as it needs them
			o.cells = append(o.cells, resultdoc.NewCellResult(c, prior.Requests.Of(rundir.KeyOf(c))))
		}
		o.verdicts = results.LatestVerdicts(prior.Verdicts)
	}
	return nil
}

// shown is a value as messages show it: raw itself when it names no
// variable, else the expanded value with the secrets masked, or the mask
// alone when none of it was registered (a value shorter than
// redact.MinLen is not, yet it came from the environment all the same).
func shown(raw, expanded string) string {
	if raw == expanded {
		return redact.String(raw)
	}
	if m := redact.String(expanded); m != expanded {
		return m
	}
	return redact.Mask
}

// Cell adds a cell, replacing an earlier row of the same cell id (a
// resumed run measures again), as the json sink does.
func (o *Sink) Cell(c results.Cell, reqs results.Requests) error {
	r := resultdoc.NewCellResult(c, reqs)
	for i := range o.cells {
		if o.cells[i].CellID == c.CellID && c.CellID != "" {
			o.cells[i] = r
			o.verdicts = slices.DeleteFunc(o.verdicts, func(v results.Verdict) bool { return v.CellID == c.CellID })
			return nil
		}
	}
	o.cells = append(o.cells, r)
	return nil
}

// Verdicts adds the cell's verdicts, stamped with the judged row's
// attempt as the json sink stamps them.
func (o *Sink) Verdicts(c results.Cell, rows []results.Verdict) error {
	for _, v := range rows {
		if v.Attempt == 0 {
			v.Attempt = c.Attempt
		}
		o.verdicts = append(o.verdicts, v)
	}
	return nil
}

// Stop builds the payload and POSTs it (or prints it, for a dry run).
// The pipeline calls Stop again on a transient failure, so it holds no
// state a failed try changed.
func (o *Sink) Stop(sum *pipeline.Summary) error {
	// The pipeline names the sink in what it says of an error.
	body, err := o.Body(sum)
	if err != nil {
		return err
	}
	if o.dryRun {
		return o.printRequest(body)
	}
	if err := o.send(body); err != nil {
		return err
	}
	fmt.Fprintf(o.env.Progress, "✓ sink %s: posted the %s payload (%d bytes) to %s\n", o.name, o.payload, len(body), o.shownURL)
	return nil
}

// Body is the request body Stop sends for the run's summary: result.json's
// document or the summary payload, with every registered secret masked
// (the rows are masked before any sink sees them; this covers what a sink
// adds, such as the run's reason).
func (o *Sink) Body(sum *pipeline.Summary) ([]byte, error) {
	res := resultdoc.Build(pipeline.RunRecord(o.env.Run, sum), o.cells, o.verdicts)
	var body []byte
	var err error
	if o.payload == PayloadSummary {
		body, err = json.MarshalIndent(NewSummary(res, sum, o.env.Run), "", "  ")
		body = append(body, '\n')
	} else {
		body, err = resultdoc.Encode(res)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding the %s payload: %w", o.payload, err)
	}
	return redact.Bytes(body), nil
}

// printRequest writes what send would send, secrets masked, to stdout
// (or the progress writer when the run has no stdout, as in a replay).
func (o *Sink) printRequest(body []byte) error {
	w := o.env.Stdout
	if w == nil {
		w = o.env.Progress
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sink %s: dry run, nothing sent:\n", o.name)
	fmt.Fprintf(&b, "%s %s\n", http.MethodPost, o.shownURL)
	h := o.requestHeaders()
	for _, name := range slices.Sorted(maps.Keys(h)) {
		v, ok := o.shown[name] // the plan's, masked; the others are benchrun's own
		if !ok {
			v = h[name]
		}
		fmt.Fprintf(&b, "%s: %s\n", name, v)
	}
	b.WriteString("\n")
	b.Write(body)
	if _, err := io.WriteString(w, redact.String(b.String())); err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	return nil
}

// requestHeaders are the headers sent: the plan's, with Content-Type and
// User-Agent unless it sets them.
func (o *Sink) requestHeaders() map[string]string {
	h := map[string]string{"Content-Type": "application/json", "User-Agent": "benchrun"}
	for name, v := range o.headers {
		for std := range h {
			if strings.EqualFold(name, std) {
				delete(h, std)
			}
		}
		h[name] = v
	}
	return h
}

// Response handling. Retry-After is not honoured: the pipeline's backoff
// (the entry's retry policy) decides when to try again, the same for
// every sink; a receiver that asks for longer than retry.attempts ×
// retry.backoff covers fails after the last try, and the message says to
// raise them.

// excerptLen is how much of a response body an error quotes.
const excerptLen = 200

// send POSTs body once. 2xx is success; 408, 425, 429 and 5xx are
// transient (the pipeline tries again); another status is permanent, its
// error quoting the start of the response body. A connection refused or
// reset and a timeout are transient through pipeline.IsTransient (it
// recognises them in the error chain, which sendError keeps).
//
// A retried POST may reach the receiver twice when the first answer was
// lost (a timeout after the receiver acted): a repeated notification is
// the lesser harm than a lost one.
func (o *Sink) send(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return o.masked(fmt.Sprintf("POST %s", o.shownURL), unwrapURL(err), "")
	}
	for name, v := range o.requestHeaders() {
		req.Header.Set(name, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		inner := unwrapURL(err)
		var ue *url.Error
		switch {
		case errors.As(err, &ue) && ue.Timeout():
			return o.masked(fmt.Sprintf("POST %s: no answer within %s", o.shownURL, o.timeout), inner, "check that the receiver is up, or raise the entry's timeout")
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// The receiver closed the connection without answering (a
			// restart, a proxy dropping it): worth another try.
			return pipeline.Transient(o.masked(fmt.Sprintf("POST %s: the connection closed without an answer", o.shownURL), inner, ""))
		}
		return o.masked(fmt.Sprintf("POST %s", o.shownURL), inner, "check the url and that the receiver is reachable from this machine")
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection can be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	se := &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: excerpt(head)}
	switch {
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooEarly,
		resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return pipeline.Transient(fmt.Errorf("POST %s: %w: the receiver is busy or down (tried again as the entry's retry allows: raise retry.attempts or retry.backoff if it needs longer)", o.shownURL, se))
	}
	return fmt.Errorf("POST %s: %w (%s)", o.shownURL, se, hint(resp.StatusCode, o.payload, len(body)))
}

// hint says what to check for a refused request.
func hint(code int, payload string, size int) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "check the credentials the headers send: a missing, expired or mistyped token"
	case http.StatusNotFound, http.StatusGone:
		return "check the url: the hook may have been deleted or the variable names another one"
	case http.StatusRequestEntityTooLarge:
		return fmt.Sprintf("the %s payload is %d bytes: try payload: %q", payload, size, PayloadSummary)
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
		if payload == PayloadResult {
			return fmt.Sprintf("check that the receiver takes benchrun's JSON; a chat hook (Slack, Discord's /slack URL) wants payload: %q, whose text field it shows", PayloadSummary)
		}
		return "check that the receiver takes benchrun's JSON and the headers it wants"
	}
	return "check the url and what the receiver expects"
}

// excerpt is the start of a response body on one line, secrets masked.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > excerptLen {
		s = string(r[:excerptLen]) + "…"
	}
	return redact.String(s)
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct {
	Code   int
	Status string // "503 Service Unavailable"
	Body   string // the start of the response body, secrets masked
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return "HTTP " + e.Status
	}
	return fmt.Sprintf("HTTP %s: %q", e.Status, e.Body)
}

// unwrapURL drops net/http's *url.Error layer, whose text repeats the
// URL (a secret, possibly); what it wraps keeps the cause that
// pipeline.IsTransient looks for.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// masked is an error whose text has every secret masked (and the URL's
// host when it came from the environment: a dial error quotes it) but
// whose chain is the cause's, for pipeline.IsTransient.
func (o *Sink) masked(msg string, cause error, hint string) error {
	return &sendError{msg: msg, cause: cause, hint: hint, hide: o.hideHost}
}

type sendError struct {
	msg   string
	cause error
	hint  string // what to check, after the cause
	hide  string
}

func (e *sendError) Error() string {
	s := e.msg + ": " + e.cause.Error()
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	if e.hide != "" {
		s = strings.ReplaceAll(s, e.hide, redact.Mask)
	}
	return redact.String(s)
}

func (e *sendError) Unwrap() error { return e.cause }
