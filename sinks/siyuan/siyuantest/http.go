package siyuantest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// envelope is SiYuan's answer. The 401 answers have no data key, hence
// the separate authFailure.
type envelope struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data"`
}

type authFailure struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

const lockScreenMsg = `Lock screen password authentication failed, please <button onclick="window.location.reload()">refresh</button> or reopen`

const jsonType = "application/json; charset=utf-8"

func (k *Kernel) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	fault, dying, up := k.receive(req, body)
	if !up {
		resetConn(w)
		return
	}
	if dying != nil {
		// No keep-alive: the client's next call dials and is refused. The
		// answer goes out whole before the connections are closed.
		w.Header().Set("Connection", "close")
		defer k.closeAfter(w, dying)
	}
	if fault != nil && fault.Delay > 0 {
		select {
		case <-time.After(fault.Delay):
		case <-req.Context().Done():
			return
		}
	}
	if fault != nil && !fault.Apply {
		writeFault(w, fault, nil)
		return
	}
	status, out := k.answer(req, body)
	switch {
	case fault != nil:
		writeFault(w, fault, out)
	case status == http.StatusNotFound:
		writeBody(w, status, "text/plain", []byte("404 page not found"))
	default:
		// encoding/json escapes <, > and & in strings and sorts map keys,
		// as the kernel's encoder does.
		b, _ := json.Marshal(out)
		writeBody(w, status, jsonType, b)
	}
}

// receive records the call and takes its fault, if one is queued. When the
// call is the one DieAfter named, the kernel is stopped from here on (no
// new connection, Restart allowed) and dying holds the connections to
// close once this answer is out. up is false when the kernel is stopped.
func (k *Kernel) receive(req *http.Request, body []byte) (fault *Fault, dying map[net.Conn]struct{}, up bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil, nil, false
	}
	tok, hasTok := headerToken(req.Header.Get("Authorization"))
	qtok := req.URL.Query()["token"]
	route := req.URL.Path
	k.calls = append(k.calls, Call{Method: req.Method, Route: route, Body: string(body),
		Auth: req.Header.Get("Authorization") != "", ContentType: req.Header.Get("Content-Type"),
		TokenOK: (hasTok && tok == k.opts.Token) || (len(qtok) > 0 && qtok[0] == k.opts.Token)})
	if q := k.faults[route]; len(q) > 0 {
		fault, k.faults[route] = &q[0], q[1:]
	}
	if n, ok := k.dieAfter[route]; ok {
		k.dieAfter[route] = n - 1
		if n <= 1 {
			delete(k.dieAfter, route)
			dying = k.stopLocked()
		}
	}
	return fault, dying, true
}

// closeAfter flushes the answer (with its Content-Length) and closes the
// dying kernel's connections.
func (k *Kernel) closeAfter(w http.ResponseWriter, dying map[net.Conn]struct{}) {
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	closeConns(dying)
}

// writeFault answers with f. With Fault.Apply, out is the answer the call
// would have had; it is what gets truncated when f names no other body.
func writeFault(w http.ResponseWriter, f *Fault, out any) {
	if f.Reset {
		resetConn(w)
		return
	}
	status := cmp.Or(f.Status, http.StatusOK)
	b, ct := []byte(f.Body), jsonType
	switch {
	case f.Body != "":
		if !json.Valid(b) {
			ct = "text/html; charset=utf-8"
		}
	case out != nil && f.Code == 0 && f.Msg == "":
		b, _ = json.Marshal(out)
	default:
		b, _ = json.Marshal(envelope{Code: f.Code, Msg: f.Msg})
	}
	if !f.Truncate {
		writeBody(w, status, ct, b)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b[:len(b)/2])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	panic(http.ErrAbortHandler) // net/http closes the connection mid-body
}

func writeBody(w http.ResponseWriter, status int, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// resetConn drops the connection with a TCP reset, no answer.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// headerToken reads "Authorization: Token <t>" (also "token", "Bearer",
// "bearer"); a value without one of those scheme words counts as no
// token, as the kernel ignores it.
func headerToken(v string) (string, bool) {
	for _, scheme := range []string{"Token ", "token ", "Bearer ", "bearer "} {
		if t, ok := strings.CutPrefix(v, scheme); ok {
			return t, true
		}
	}
	return "", false
}

// refusal is why the kernel refuses req ("" when it does not): a
// wrong token in the header or the query always; no token only with a
// lock-screen password (without one, loopback callers need none).
func (k *Kernel) refusal(req *http.Request) string {
	if tok, ok := headerToken(req.Header.Get("Authorization")); ok {
		return failIf(tok != k.opts.Token, "Auth failed [header: Authorization]")
	}
	if q, ok := req.URL.Query()["token"]; ok {
		return failIf(len(q) == 0 || q[0] != k.opts.Token, "Auth failed [query: token]")
	}
	ua := req.Header.Get("User-Agent")
	if k.opts.Lock && (strings.HasPrefix(ua, "Mozilla/") || strings.HasPrefix(ua, "SiYuan/")) {
		return lockScreenMsg
	}
	return failIf(k.opts.Lock, "Auth failed [session]")
}

func failIf(failed bool, msg string) string {
	if failed {
		return msg
	}
	return ""
}

// answer is the kernel proper: routing, auth, arguments, the handler.
func (k *Kernel) answer(req *http.Request, body []byte) (int, any) {
	path := req.URL.Path
	rt, ok := routes[path]
	if !ok || req.Method != http.MethodPost {
		return http.StatusNotFound, nil
	}
	if msg := k.refusal(req); msg != "" && !rt.open {
		return http.StatusUnauthorized, authFailure{Code: -1, Msg: msg}
	}
	q := &request{arg: map[string]any{}, contentType: req.Header.Get("Content-Type"), body: body}
	if !rt.raw {
		if len(bytes.TrimSpace(body)) == 0 {
			return http.StatusOK, envelope{Code: -1, Msg: "Parses request [" + path + "] failed: the request body is empty or truncated (EOF)"}
		}
		if err := json.Unmarshal(body, &q.arg); err != nil {
			return http.StatusOK, envelope{Code: -1, Msg: "Parses request [" + path + "] failed: " + err.Error()}
		}
	}
	return http.StatusOK, envelope(k.run(rt, q))
}

// ret is a handler's answer in the making. When a handler stops on a
// missing field (missingField), the answer is ret as it stands: SiYuan's
// handlers defer writing their result, so a failed type assertion turns
// into code 0 with data null.
type ret struct {
	Code int
	Msg  string
	Data any
}

func (r *ret) fail(code int, msg string, data any) { r.Code, r.Msg, r.Data = code, msg, data }

type missingField struct{ name string }

// request is a call's arguments: the JSON body's fields, or the raw body
// for the routes that take no JSON; id is the route's id argument.
type request struct {
	arg         map[string]any
	id          string
	contentType string
	body        []byte
}

// str reads a string argument; a missing or mistyped one stops the
// handler the way SiYuan's arg["x"].(string) does (see ret).
func (q *request) str(name string) string {
	s, ok := q.arg[name].(string)
	if !ok {
		panic(missingField{name})
	}
	return s
}

func (q *request) boolOr(name string, def bool) bool {
	v, ok := q.arg[name]
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		panic(missingField{name})
	}
	return b
}

// run calls the route's handler under the lock, after reading its id
// argument: one that is not an id fails the call with "invalid ID
// argument".
func (k *Kernel) run(rt route, q *request) (r ret) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(missingField); !ok {
				panic(p)
			}
		}
	}()
	k.mu.Lock()
	defer k.mu.Unlock()
	if rt.id != "" {
		if q.id = q.str(rt.id); !validID(q.id) {
			r.fail(-1, "invalid ID argument", nil)
			return r
		}
	}
	rt.h(k, q, &r)
	return r
}
