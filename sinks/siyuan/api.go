package siyuan

// The SiYuan kernel's HTTP API, as the sink uses it. Every call is a POST
// of a JSON body with "Authorization: Token <token>", answered with the
// envelope {"code":0,"msg":"","data":...}. The kernel reports nearly every
// failure with HTTP 200 and a code other than 0, and some failures as a
// false success (code 0, data null), so the client checks the envelope
// strictly and the data where data is expected. shared/SIYUAN.md records
// how a real v3.7.3 kernel answers; siyuantest replays it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/pipeline"
)

// DefaultTokenEnv is the environment variable the token is read from
// unless the sink names another; error messages tell the user to set it.
const DefaultTokenEnv = "SIYUAN_TOKEN"

// DefaultURLHint tells the user how to point the sink at a kernel.
const DefaultURLHint = "start SiYuan or set the sink's url / SIYUAN_URL"

// maxAnswer bounds an answer read into memory (exports of large documents
// are the biggest; 64 MiB is far beyond any).
const maxAnswer = 64 << 20

// maxTitle is the kernel's limit on a title (longer ones are cut on
// create and refused on rename).
const maxTitle = 512

// Client calls one SiYuan kernel. The zero HTTP uses a client with a 30 s
// timeout.
type Client struct {
	BaseURL string // e.g. "http://127.0.0.1:6806"
	Token   string // the API token; sent on every call when set
	HTTP    *http.Client
	// TokenEnv names the variable the token came from, for messages
	// ("" means DefaultTokenEnv).
	TokenEnv string
	// URLHint says how to reach another kernel, for messages ("" means
	// DefaultURLHint).
	URLHint string
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second, CheckRedirect: httpsafe.NoRedirects}

// ---- errors ----

// ErrNotFound is matched (errors.Is) by failures that mean the document
// or block is not there: "tree not found", an empty attribute set, an
// empty export.
var ErrNotFound = errors.New("not found")

// APIError is an answer with a code other than 0 (or a 401/5xx with an
// envelope).
type APIError struct {
	Call       string // e.g. "filetree/createDocWithMd"
	URL        string // the kernel's base URL
	HTTPStatus int
	Code       int
	Msg        string // the token, if the kernel echoed it, is replaced by "xxxxx"

	tokenEnv string
	hadToken bool
}

// Auth reports whether the kernel refused the call's credentials.
func (e *APIError) Auth() bool {
	return e.HTTPStatus == http.StatusUnauthorized || strings.HasPrefix(e.Msg, "Auth failed") ||
		strings.HasPrefix(e.Msg, "Lock screen password authentication failed")
}

func (e *APIError) notFound() bool {
	switch e.Msg {
	case "tree not found", "get block failed: tree not found", "block not found":
		return true
	}
	return false
}

// Is makes errors.Is(err, ErrNotFound) true for "tree not found" answers.
func (e *APIError) Is(target error) bool { return target == ErrNotFound && e.notFound() }

func (e *APIError) Error() string {
	env := e.tokenEnv
	if env == "" {
		env = DefaultTokenEnv
	}
	if e.Auth() {
		if e.hadToken {
			return fmt.Sprintf("SiYuan at %s refused the token (%s): set %s to the API token from SiYuan's Settings → About", e.URL, e.Msg, env)
		}
		return fmt.Sprintf("SiYuan at %s needs an API token (%s): set %s to the API token from SiYuan's Settings → About", e.URL, e.Msg, env)
	}
	s := fmt.Sprintf("SiYuan at %s: %s failed: %s (code %d", e.URL, e.Call, e.Msg, e.Code)
	if e.HTTPStatus != http.StatusOK {
		s += fmt.Sprintf(", HTTP %d", e.HTTPStatus)
	}
	s += ")"
	if h := hints[e.Msg]; h != "" {
		s += ": " + h
	}
	return s
}

// hints say what to do about the kernel's messages that do not say it.
var hints = map[string]string{
	"Query notebook failed": "the notebook is closed or gone; open it in SiYuan or remove the sink's notebook setting so it is created",
	"invalid ID argument":   "not a SiYuan id (14 digits, '-', 7 lowercase letters/digits)",
	"indexing":              "the kernel is still indexing; try again",
}

// UnreachableError is a call that got no whole answer: connection refused
// or reset, a timeout, an answer cut off. It is always marked transient.
type UnreachableError struct {
	Call string
	URL  string
	Err  error
	msg  string // Err's text without the token
	hint string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("SiYuan at %s is not reachable (%s: %s); %s", e.URL, e.Call, e.msg, e.hint)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// AnswerError is an answer that is not what a SiYuan kernel sends: not the
// envelope, an unknown route, code 0 without the data the call must
// return.
type AnswerError struct {
	Call       string
	URL        string
	HTTPStatus int
	Reason     string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("SiYuan at %s gave a malformed answer to %s (HTTP %d): %s", e.URL, e.Call, e.HTTPStatus, e.Reason)
}

// IsNotFound reports whether err means the document or block is not
// there (e.g. a second removeDocByID: "tree not found").
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ---- transport ----

type envelope struct {
	code    int
	msg     string
	data    json.RawMessage
	hasData bool
}

// parseEnvelope is strict: a JSON object with a numeric code and a string
// msg; data may be missing only on failures (the 401 answers).
func parseEnvelope(b []byte) (envelope, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return envelope{}, err
	}
	var e envelope
	c, ok := raw["code"]
	if !ok {
		return e, errors.New(`no "code"`)
	}
	if err := json.Unmarshal(c, &e.code); err != nil {
		return e, fmt.Errorf(`"code" is not an integer: %w`, err)
	}
	m, ok := raw["msg"]
	if !ok {
		return e, errors.New(`no "msg"`)
	}
	if err := json.Unmarshal(m, &e.msg); err != nil {
		return e, fmt.Errorf(`"msg" is not a string: %w`, err)
	}
	e.data, e.hasData = raw["data"]
	if e.code == 0 && !e.hasData {
		return e, errors.New(`code 0 without "data"`)
	}
	return e, nil
}

func (c *Client) baseURL() string {
	u, err := url.Parse(strings.TrimRight(c.BaseURL, "/"))
	if err != nil {
		return c.scrub(c.BaseURL)
	}
	return c.scrub(u.Redacted())
}

// scrub keeps the token out of every message.
func (c *Client) scrub(s string) string {
	if c.Token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.Token, "xxxxx")
}

func (c *Client) unreachable(call string, err error) error {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error() // the URL is said once, in front
	}
	if errors.Is(err, io.EOF) && !strings.Contains(msg, "cut off") {
		msg = "the connection closed without an answer (" + msg + ")"
	}
	hint := c.URLHint
	if hint == "" {
		hint = DefaultURLHint
	}
	return pipeline.Transient(&UnreachableError{Call: call, URL: c.baseURL(), Err: err, msg: c.scrub(msg), hint: hint})
}

func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// do posts body to /api/<call> and decodes the answer's data into out
// (when out is not nil and data is not null). It reports whether data was
// null.
func (c *Client) do(ctx context.Context, call, contentType string, body []byte, out any) (null bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/api/"+call, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("SiYuan %s: %s", call, c.scrub(err.Error()))
	}
	req.Header.Set("Content-Type", contentType)
	if c.Token != "" {
		// Always: a kernel without a lock-screen password accepts calls
		// without a token, but one with a password (any Docker kernel)
		// does not, and a wrong token is refused either way.
		req.Header.Set("Authorization", "Token "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("SiYuan %s: %w", call, ctx.Err())
		}
		return false, c.unreachable(call, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("SiYuan %s: %w", call, ctx.Err())
		}
		return false, c.unreachable(call, fmt.Errorf("the answer was cut off: %w", err))
	}
	if resp.StatusCode == http.StatusNotFound && !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return false, &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: resp.StatusCode,
			Reason: fmt.Sprintf("no such API call (%s); is the url a SiYuan kernel (v3.x)?", c.scrub(excerpt(b)))}
	}
	env, perr := parseEnvelope(b)
	if perr != nil {
		ae := &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: resp.StatusCode,
			Reason: fmt.Sprintf("not the {code, msg, data} envelope (%s; %s %s); is the url a SiYuan kernel?",
				c.scrub(perr.Error()), resp.Header.Get("Content-Type"), c.scrub(excerpt(b)))}
		var se *json.SyntaxError
		truncated := errors.Is(perr, io.ErrUnexpectedEOF) || (errors.As(perr, &se) && strings.Contains(se.Error(), "unexpected end"))
		if resp.StatusCode >= 500 || truncated {
			return false, pipeline.Transient(ae) // a proxy's error page, a kernel going down
		}
		return false, ae
	}
	if env.code != 0 || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 300 {
		e := &APIError{Call: call, URL: c.baseURL(), HTTPStatus: resp.StatusCode, Code: env.code,
			Msg: c.scrub(env.msg), tokenEnv: c.TokenEnv, hadToken: c.Token != ""}
		if resp.StatusCode >= 500 || env.msg == "indexing" {
			return false, pipeline.Transient(e)
		}
		return false, e
	}
	if string(env.data) == "null" {
		return true, nil
	}
	if out != nil {
		if err := json.Unmarshal(env.data, out); err != nil {
			return false, &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: resp.StatusCode,
				Reason: fmt.Sprintf("data of an unexpected shape (%s): %s", c.scrub(err.Error()), c.scrub(excerpt(env.data)))}
		}
	}
	return false, nil
}

// post sends arg as JSON.
func (c *Client) post(ctx context.Context, call string, arg any, out any) (bool, error) {
	if arg == nil {
		arg = struct{}{}
	}
	body, err := json.Marshal(arg)
	if err != nil {
		return false, fmt.Errorf("SiYuan %s: encode the call: %w", call, err)
	}
	return c.do(ctx, call, "application/json", body, out)
}

// need turns a false success (code 0, data null) into an error.
func (c *Client) need(call string, null bool, err error, what string) error {
	if err != nil || !null {
		return err
	}
	return &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: http.StatusOK,
		Reason: "code 0 with data null where " + what + " was expected (the kernel failed without saying why)"}
}

func (c *Client) notFound(call, what string) error {
	return fmt.Errorf("SiYuan at %s: %s: %s: %w", c.baseURL(), call, what, ErrNotFound)
}

// ---- checks the kernel does not make (it would silently do something
// else) ----

var idRe = regexp.MustCompile(`^\d{14}-[0-9a-z]{7}$`)

// ValidID reports whether s has the shape of a SiYuan id.
func ValidID(s string) bool { return idRe.MatchString(s) }

// CheckHPath checks a document path the way getIDsByHPath will look it
// up: the kernel adds a missing leading "/", turns a trailing "/" into a
// repeated segment and cuts titles at 512 characters, so a path that
// needs any of that is never found again and posting twice duplicates.
func CheckHPath(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return fmt.Errorf("document path %q must start with \"/\" and name a document", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch {
		case seg == "":
			return fmt.Errorf("document path %q has an empty segment (a trailing or doubled \"/\")", p)
		case seg == "." || seg == "..":
			return fmt.Errorf("document path %q has a %q segment", p, seg)
		case utf8.RuneCountInString(seg) > maxTitle:
			return fmt.Errorf("document path %q has a title over %d characters", p, maxTitle)
		}
	}
	return nil
}

func checkTitle(t string) error {
	switch {
	case t == "":
		return errors.New("empty document title")
	case strings.Contains(t, "/"):
		return fmt.Errorf("document title %q contains \"/\" (the kernel drops it)", t)
	case utf8.RuneCountInString(t) > maxTitle:
		return fmt.Errorf("document title over %d characters", maxTitle)
	}
	return nil
}

var attrNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// CheckAttrName checks an attribute name as the kernel does, except that
// upper case is refused here: the kernel lowers it silently, and a later
// lookup by the name as written would miss.
func CheckAttrName(n string) error {
	if !attrNameRe.MatchString(n) {
		return fmt.Errorf("attribute name %q: only lowercase letters, digits and \"-\", starting with a letter (user attributes start with \"custom-\")", n)
	}
	return nil
}

// CheckAssetName refuses names the kernel would change or that would break
// the markdown link: spaces, brackets, path separators.
func CheckAssetName(n string) error {
	if n == "" || strings.ContainsAny(n, " \t\r\n()[]{}<>\\/:*?\"|") {
		return fmt.Errorf("asset name %q: use no spaces, brackets or path characters", n)
	}
	return nil
}

// ---- calls ----

// BootProgress is /api/system/bootProgress: the kernel answers other calls
// before Progress reaches 100, but they may fail until it does.
type BootProgress struct {
	Progress int    `json:"progress"`
	Details  string `json:"details"`
}

// BootProgress asks how far the kernel has booted.
func (c *Client) BootProgress(ctx context.Context) (BootProgress, error) {
	var p BootProgress
	null, err := c.post(ctx, "system/bootProgress", nil, &p)
	return p, c.need("system/bootProgress", null, err, "the boot progress")
}

// Version returns the kernel's version, e.g. "3.7.3".
func (c *Client) Version(ctx context.Context) (string, error) {
	var v string
	null, err := c.post(ctx, "system/version", nil, &v)
	return v, c.need("system/version", null, err, "the version")
}

// Notebook is a notebook. Names can repeat.
type Notebook struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Closed bool   `json:"closed"`
}

// ListNotebooks lists the notebooks, newest first, closed ones included.
func (c *Client) ListNotebooks(ctx context.Context) ([]Notebook, error) {
	var d struct {
		Notebooks *[]Notebook `json:"notebooks"`
	}
	null, err := c.post(ctx, "notebook/lsNotebooks", nil, &d)
	if err = c.need("notebook/lsNotebooks", null, err, "the notebooks"); err != nil {
		return nil, err
	}
	if d.Notebooks == nil {
		return nil, &AnswerError{Call: "notebook/lsNotebooks", URL: c.baseURL(), HTTPStatus: http.StatusOK, Reason: `no "notebooks" in the data`}
	}
	return *d.Notebooks, nil
}

// CreateNotebook creates a notebook. The kernel makes a new one even when
// one of that name exists: look in ListNotebooks first.
func (c *Client) CreateNotebook(ctx context.Context, name string) (Notebook, error) {
	var d struct {
		Notebook Notebook `json:"notebook"`
	}
	null, err := c.post(ctx, "notebook/createNotebook", map[string]string{"name": name}, &d)
	if err = c.need("notebook/createNotebook", null, err, "the new notebook"); err != nil {
		return Notebook{}, err
	}
	if !ValidID(d.Notebook.ID) {
		return Notebook{}, &AnswerError{Call: "notebook/createNotebook", URL: c.baseURL(), HTTPStatus: http.StatusOK,
			Reason: fmt.Sprintf("the new notebook's id %q is not an id", d.Notebook.ID)}
	}
	return d.Notebook, nil
}

// OpenNotebook opens a notebook (also when it is open already).
func (c *Client) OpenNotebook(ctx context.Context, id string) error {
	_, err := c.post(ctx, "notebook/openNotebook", map[string]string{"notebook": id}, nil)
	return err
}

// CloseNotebook closes a notebook.
func (c *Client) CloseNotebook(ctx context.Context, id string) error {
	_, err := c.post(ctx, "notebook/closeNotebook", map[string]string{"notebook": id}, nil)
	return err
}

// RemoveNotebook removes a notebook and its documents.
func (c *Client) RemoveNotebook(ctx context.Context, id string) error {
	_, err := c.post(ctx, "notebook/removeNotebook", map[string]string{"notebook": id}, nil)
	return err
}

// IDsByHPath returns the ids of the documents at hpath in the notebook,
// oldest first: none, one, or several (the kernel lets paths repeat).
// hpath "/" returns the notebook's own id. An unknown notebook gives none.
func (c *Client) IDsByHPath(ctx context.Context, notebook, hpath string) ([]string, error) {
	var ids []string
	null, err := c.post(ctx, "filetree/getIDsByHPath", map[string]string{"notebook": notebook, "path": hpath}, &ids)
	if err = c.need("filetree/getIDsByHPath", null, err, "a list of ids"); err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// CreateDocWithMd creates a document at hpath (parents made as needed)
// and returns its id. It does not look first: the same path twice makes
// two documents. hpath must pass CheckHPath.
func (c *Client) CreateDocWithMd(ctx context.Context, notebook, hpath, markdown string) (string, error) {
	const call = "filetree/createDocWithMd"
	if err := CheckHPath(hpath); err != nil {
		return "", fmt.Errorf("SiYuan %s: %w", call, err)
	}
	var id string
	null, err := c.post(ctx, call, map[string]string{"notebook": notebook, "path": hpath, "markdown": markdown}, &id)
	if err = c.need(call, null, err, "the new document's id"); err != nil {
		return "", err
	}
	if !ValidID(id) {
		return "", &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: http.StatusOK, Reason: fmt.Sprintf("the new document's id %q is not an id", id)}
	}
	return id, nil
}

// UpdateDocMarkdown replaces the whole body of document id with markdown.
func (c *Client) UpdateDocMarkdown(ctx context.Context, id, markdown string) error {
	_, err := c.post(ctx, "block/updateBlock", map[string]string{"dataType": "markdown", "id": id, "data": markdown}, nil)
	return err
}

// AppendMarkdown appends markdown at the end of document id.
func (c *Client) AppendMarkdown(ctx context.Context, id, markdown string) error {
	_, err := c.post(ctx, "block/appendBlock", map[string]string{"dataType": "markdown", "parentID": id, "data": markdown}, nil)
	return err
}

// Block is a top-level block of a document.
type Block struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "h", "t" (table), "c" (code, mermaid too), "p" (images too), ...
	SubType  string `json:"subType"`
	Content  string `json:"content"`
	Markdown string `json:"markdown"`
}

// ChildBlocks returns the top-level blocks of document id (none for an
// unknown id).
func (c *Client) ChildBlocks(ctx context.Context, id string) ([]Block, error) {
	var bs []Block
	_, err := c.post(ctx, "block/getChildBlocks", map[string]string{"id": id}, &bs)
	return bs, err
}

// SetBlockAttrs sets attributes of block id; an empty value removes one.
// Names must pass CheckAttrName.
func (c *Client) SetBlockAttrs(ctx context.Context, id string, attrs map[string]string) error {
	for n := range attrs {
		if err := CheckAttrName(n); err != nil {
			return fmt.Errorf("SiYuan attr/setBlockAttrs: %w", err)
		}
	}
	_, err := c.post(ctx, "attr/setBlockAttrs", map[string]any{"id": id, "attrs": attrs}, nil)
	return err
}

// BlockAttrs returns the attributes of block id, with the kernel's own
// (id, title, type, updated). An unknown id is ErrNotFound (the kernel
// answers an empty set).
func (c *Client) BlockAttrs(ctx context.Context, id string) (map[string]string, error) {
	var attrs map[string]string
	null, err := c.post(ctx, "attr/getBlockAttrs", map[string]string{"id": id}, &attrs)
	if err = c.need("attr/getBlockAttrs", null, err, "the attributes"); err != nil {
		return nil, err
	}
	if len(attrs) == 0 {
		return nil, c.notFound("attr/getBlockAttrs", "no block "+id)
	}
	return attrs, nil
}

// FlushTransaction writes pending changes to the SQL index: without it a
// new or re-attributed document is invisible to SQL for a few seconds and
// a removed one still visible.
func (c *Client) FlushTransaction(ctx context.Context) error {
	_, err := c.post(ctx, "sqlite/flushTransaction", nil, nil)
	return err
}

// SQL runs one SELECT on the kernel's index (numbers come back as
// float64). The kernel adds LIMIT 64 where none is given; give one. Call
// FlushTransaction first to see recent writes.
func (c *Client) SQL(ctx context.Context, stmt string) ([]map[string]any, error) {
	var rows []map[string]any
	_, err := c.post(ctx, "query/sql", map[string]string{"stmt": stmt}, &rows)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	return rows, nil
}

// HPathByID returns the path of document id, "/" for a notebook id.
func (c *Client) HPathByID(ctx context.Context, id string) (string, error) {
	var p string
	null, err := c.post(ctx, "filetree/getHPathByID", map[string]string{"id": id}, &p)
	return p, c.need("filetree/getHPathByID", null, err, "the path")
}

// RenameDoc sets the title of document id (the last segment of its path).
func (c *Client) RenameDoc(ctx context.Context, id, title string) error {
	if err := checkTitle(title); err != nil {
		return fmt.Errorf("SiYuan filetree/renameDocByID: %w", err)
	}
	_, err := c.post(ctx, "filetree/renameDocByID", map[string]string{"id": id, "title": title}, nil)
	return err
}

// RemoveDoc removes document id and the documents under it; removing it
// again is ErrNotFound.
func (c *Client) RemoveDoc(ctx context.Context, id string) error {
	_, err := c.post(ctx, "filetree/removeDocByID", map[string]string{"id": id}, nil)
	return err
}

// ExportMarkdown returns the markdown of document id as the kernel writes
// it (tables re-formatted), without front matter or title heading. An
// unknown id is ErrNotFound.
func (c *Client) ExportMarkdown(ctx context.Context, id string) (string, error) {
	var d struct {
		Content string `json:"content"`
		HPath   string `json:"hPath"`
	}
	null, err := c.post(ctx, "export/exportMdContent", map[string]any{"id": id, "yfm": false, "addTitle": false}, &d)
	if err = c.need("export/exportMdContent", null, err, "the export"); err != nil {
		return "", err
	}
	if d.HPath == "" {
		return "", c.notFound("export/exportMdContent", "no document "+id)
	}
	return d.Content, nil
}

// AssetFile is a file to upload.
type AssetFile struct {
	Name string // must pass CheckAssetName; unique within one upload
	Data []byte
}

// UploadAssets uploads files to the workspace's assets and returns, per
// file name, the path to write in markdown ("assets/<stem>-<id><ext>").
// The same name with the same content gives the existing path again.
func (c *Client) UploadAssets(ctx context.Context, files []AssetFile) (map[string]string, error) {
	const call = "asset/upload"
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("assetsDirPath", "/assets/"); err != nil {
		return nil, fmt.Errorf("SiYuan %s: %w", call, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if err := CheckAssetName(f.Name); err != nil {
			return nil, fmt.Errorf("SiYuan %s: %w", call, err)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("SiYuan %s: asset name %q given twice", call, f.Name)
		}
		seen[f.Name] = true
		// The field name must be exactly "file[]": the kernel answers
		// code 0 with nothing stored for any other.
		fw, err := w.CreateFormFile("file[]", f.Name)
		if err != nil {
			return nil, fmt.Errorf("SiYuan %s: %w", call, err)
		}
		_, _ = fw.Write(f.Data)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("SiYuan %s: %w", call, err)
	}
	var d struct {
		ErrFiles []string          `json:"errFiles"`
		SuccMap  map[string]string `json:"succMap"`
	}
	null, err := c.do(ctx, call, w.FormDataContentType(), b.Bytes(), &d)
	if err = c.need(call, null, err, "the uploaded paths"); err != nil {
		return nil, err
	}
	if d.ErrFiles != nil {
		return nil, &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: http.StatusOK, Reason: fmt.Sprintf("files not stored: %q", d.ErrFiles)}
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		p, ok := d.SuccMap[f.Name]
		if !ok || p == "" {
			return nil, &AnswerError{Call: call, URL: c.baseURL(), HTTPStatus: http.StatusOK, Reason: fmt.Sprintf("no path for %q in succMap", f.Name)}
		}
		out[f.Name] = p
	}
	return out, nil
}
