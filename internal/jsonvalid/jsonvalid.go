// Package jsonvalid checks the answers a server gives under a JSON
// constraint: a structured-output answer against the request's
// `response_format` schema, and a tool call's arguments against the
// parameters of the tool it names. The JSON Schema rules are
// santhosh-tekuri/jsonschema's (drafts 4 to 2020-12, the draft a schema's
// `$schema` names, 2020-12 when it names none); nothing here validates by
// hand. A schema is compiled once per plan and checked against every
// answer, so the check costs microseconds per request, not a compile.
//
// A schema may only refer to itself: a `$ref` to a file or URL fails to
// compile (the loader is never given a network or the disk), because a
// benchmark must not fetch from the internet in the middle of a run.
package jsonvalid

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Outcome is what one answer is under its constraint.
type Outcome int8

const (
	// Valid: JSON, and valid against the schema.
	Valid Outcome = iota
	// NotJSON: the text does not parse as one JSON value (empty, cut
	// short, prose around it, whitespace only).
	NotJSON
	// Invalid: JSON, but not valid against the schema (or, for a tool
	// call, naming a tool the request did not offer).
	Invalid
)

func (o Outcome) String() string {
	switch o {
	case Valid:
		return "valid"
	case NotJSON:
		return "not JSON"
	}
	return "invalid"
}

// Result is one answer's outcome, with the reason when it is not Valid
// (the first schema error, short enough for a row's note).
type Result struct {
	Outcome Outcome
	Reason  string
}

// JSON says whether the answer parsed as JSON.
func (r Result) JSON() bool { return r.Outcome != NotJSON }

// Schema is a compiled JSON Schema.
type Schema struct {
	s *jsonschema.Schema
}

// resourceURL names the schema being compiled: a local name no loader
// resolves, so a $ref beyond the schema itself fails.
const resourceURL = "urn:benchrun:schema"

// Compile compiles a JSON Schema given as JSON text; what names the
// schema in errors (a plan field, a dataset line).
func Compile(what string, schema []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%s: the schema is not JSON: %w", what, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s, err := c.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid JSON Schema: %w", what, err)
	}
	return &Schema{s: s}, nil
}

// noLoader refuses every resource beyond the one added: no file, no URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a schema may refer only to itself (no files, no URLs)", url)
}

// Check checks one answer's text against the schema.
func (s *Schema) Check(text string) Result {
	inst, ok := parse(text)
	if !ok {
		return Result{Outcome: NotJSON, Reason: notJSONReason(text)}
	}
	if err := s.s.Validate(inst); err != nil {
		return Result{Outcome: Invalid, Reason: firstError(err)}
	}
	return Result{Outcome: Valid}
}

// parse reads text as exactly one JSON value (whitespace around it
// allowed, nothing else).
func parse(text string) (any, bool) {
	if strings.TrimSpace(text) == "" {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // the schema library's own number form: exact integers
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if strings.TrimSpace(text[dec.InputOffset():]) != "" {
		return nil, false // a second value, or prose after the first
	}
	return v, true
}

func notJSONReason(text string) string {
	if strings.TrimSpace(text) == "" {
		return "the answer is empty or whitespace only"
	}
	return "the answer is not one JSON value"
}

// firstError is the schema library's first leaf error: where in the
// answer and what failed, one line.
func firstError(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		for len(ve.Causes) > 0 {
			ve = ve.Causes[0]
		}
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		msg := ve.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && !strings.Contains(msg[i:], "\n") {
			msg = msg[i+2:]
		}
		return fmt.Sprintf("at %s: %s", loc, strings.TrimSpace(msg))
	}
	return err.Error()
}
