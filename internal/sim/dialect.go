package sim

import "net/http"

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

func (s *Server) writeAPIErr(w http.ResponseWriter, e *apiErr) { s.persona.writeErr(w, e) }

// lookupModel resolves a request's model field to the served name, the
// way the personality's engine does: generic and vllm want a served name
// ("" is the first), llama-server and sglang serve their one model whatever
// the field says, and ollama accepts a name with or without ":latest".
func (s *Server) lookupModel(name string) (string, *apiErr) { return s.persona.lookupModel(s, name) }

// notFound answers an unknown route the way the engine's HTTP stack does.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) { s.persona.notFound(s, w, r) }
