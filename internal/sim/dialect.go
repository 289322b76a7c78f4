package sim

import (
	"net/http"
	"strings"
)

// apiErr is a request error with what its response carries; each
// personality writes it in its engine's shape (writeAPIErr).
type apiErr struct {
	status int
	typ    string
	msg    string
	param  string // vLLM's "param" ("model"); "" is null
	// llama-server's exceed_context_size_error carries the counts.
	nPrompt, nCtx int
}

func (e *apiErr) Error() string { return e.msg }

// writeErr writes an error in the personality's shape.
func (s *Server) writeErr(w http.ResponseWriter, status int, typ, msg string) {
	s.writeAPIErr(w, &apiErr{status: status, typ: typ, msg: msg})
}

// vllmError is vLLM's (and SGLang's) ErrorResponse, in its field order.
type vllmError struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (s *Server) writeAPIErr(w http.ResponseWriter, e *apiErr) { s.persona.writeErr(w, e) }

// llamaErrorType maps a status to llama.cpp's error_type names.
func llamaErrorType(e *apiErr) string {
	switch {
	case e.typ == "exceed_context_size_error":
		return e.typ
	case e.status == http.StatusBadRequest:
		return "invalid_request_error"
	case e.status == http.StatusUnauthorized:
		return "authentication_error"
	case e.status == http.StatusForbidden:
		return "permission_error"
	case e.status == http.StatusNotFound:
		return "not_found_error"
	case e.status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case e.status == http.StatusNotImplemented:
		return "not_supported_error"
	case e.status == http.StatusServiceUnavailable:
		return "unavailable_error"
	}
	return "server_error"
}

// lookupModel resolves a request's model field to the served name, the
// way the personality's engine does: generic and vllm want a served name
// ("" is the first), llama-server and sglang serve their one model whatever
// the field says, and ollama accepts a name with or without ":latest".
func (s *Server) lookupModel(name string) (string, *apiErr) { return s.persona.lookupModel(s, name) }

// ollamaTag is a served name as Ollama lists it ("x" is "x:latest").
func ollamaTag(m string) string {
	if strings.Contains(m, ":") {
		return m
	}
	return m + ":latest"
}

// ollamaModel finds the served model a name means under Ollama's naming.
func (s *Server) ollamaModel(name string) (string, bool) {
	for _, m := range s.cfg.Models {
		if name == m || ollamaTag(name) == ollamaTag(m) {
			return m, true
		}
	}
	return "", false
}

// notFound answers an unknown route the way the engine's HTTP stack does.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) { s.persona.notFound(s, w, r) }
