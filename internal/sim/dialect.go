package sim

import (
	"fmt"
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

func (s *Server) writeAPIErr(w http.ResponseWriter, e *apiErr) {
	switch s.persona {
	case PersonaVLLM, PersonaSGLang:
		var param *string
		if e.param != "" {
			param = &e.param
		}
		writeRawJSON(w, e.status, vllmError{Object: "error", Message: e.msg, Type: e.typ, Param: param, Code: e.status})
	case PersonaLlamaServer:
		// llama.cpp's format_error_response; nlohmann::json sorts the keys,
		// as encoding/json does for a map.
		body := map[string]any{"code": e.status, "message": e.msg, "type": llamaErrorType(e)}
		if e.typ == "exceed_context_size_error" {
			body["n_prompt_tokens"], body["n_ctx"] = e.nPrompt, e.nCtx
		}
		writeRawJSON(w, e.status, map[string]any{"error": body})
	case PersonaOllama:
		// Ollama's OpenAI-compatible layer (openai.NewError).
		typ := "api_error"
		switch e.status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		}
		writeRawJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.msg, "type": typ, "param": nil, "code": nil}})
	default:
		writeError(w, e.status, e.typ, e.msg)
	}
}

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
func (s *Server) lookupModel(name string) (string, *apiErr) {
	switch s.persona {
	case PersonaLlamaServer, PersonaSGLang:
		if name == "" {
			return s.cfg.Models[0], nil
		}
		return name, nil
	case PersonaOllama:
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if _, ok := s.ollamaModel(name); ok {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "not_found_error",
			msg: fmt.Sprintf("model %q not found, try pulling it first", name)}
	case PersonaVLLM:
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if s.models[name] {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
			msg: fmt.Sprintf("The model `%s` does not exist.", name)}
	}
	if name == "" {
		return s.cfg.Models[0], nil
	}
	if s.models[name] {
		return name, nil
	}
	return "", &apiErr{status: http.StatusNotFound, typ: "NotFoundError", msg: s.unknownModel(name).Error()}
}

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
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	switch s.persona {
	case PersonaVLLM, PersonaSGLang: // FastAPI
		writeRawJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	case PersonaLlamaServer:
		s.writeErr(w, http.StatusNotFound, "not_found_error", "File Not Found")
	case PersonaOllama: // Go's mux (gin's is the same text)
		http.NotFound(w, r)
	default:
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}
}

// serverHeader is the Server header the engine's HTTP stack sends.
func serverHeader(persona string) string {
	switch persona {
	case PersonaLlamaServer:
		return "llama.cpp"
	case PersonaVLLM, PersonaSGLang:
		return "uvicorn"
	}
	return ""
}
