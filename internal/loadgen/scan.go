package loadgen

import (
	"encoding/json"
	"errors"
	"strconv"
)

// chunkInfo is what the client needs from one streamed event, read without
// decoding the JSON into Go values (encoding/json costs several
// allocations per event; the scan costs none).
type chunkInfo struct {
	// HasText: some choice carries non-empty text, delta.content,
	// delta.reasoning_content, delta.reasoning or message.content. A
	// role-only chunk ({"delta":{"role":"assistant"}}) has none.
	HasText bool
	// HasReasoning: some choice carries non-empty reasoning
	// (delta.reasoning_content, delta.reasoning, or a whole answer's
	// message.reasoning_content or message.reasoning). HasAnswer: some
	// choice carries answer text (text, delta.content, message.content)
	// or a tool call (a non-empty delta.tool_calls or
	// message.tool_calls). An event with text has either or both: the
	// kind of its token event (TokenEvent.Kind).
	HasReasoning bool
	HasAnswer    bool
	// HasToolCall: some choice carries a tool call (part of HasAnswer).
	// ToolCalls are its pieces, one per element of tool_calls (raw
	// subslices of the event: copy before the next event).
	HasToolCall bool
	ToolCalls   []toolPiece
	// HasReasoningTokens: usage.completion_tokens_details.reasoning_tokens
	// is a number (ReasoningTokens); absent or null, the server did not
	// say how many of the completion tokens were reasoning.
	HasReasoningTokens bool
	ReasoningTokens    int
	// HasUsage: a non-null top-level usage object; the counts are 0 when
	// absent or null.
	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	// HasCached: usage.prompt_tokens_details.cached_tokens is a number
	// (CachedTokens; 0 is a reported miss). Absent, null or any other
	// value: the server did not say.
	HasCached    bool
	CachedTokens int
	// Text is the raw (still JSON-escaped) answer text of the first choice
	// that carries one: its text, else its delta.content, else its
	// message.content (reasoning is no part of the answer a conversation
	// sends back). TextEscaped says it needs unquoting.
	Text        []byte
	TextEscaped bool
	// ID is the raw (still JSON-escaped) bytes of the top-level id string;
	// IDEscaped says it contains a backslash and needs unquoting.
	ID        []byte
	IDEscaped bool
	// Model is the raw (still JSON-escaped) top-level model string: the
	// model the server says answered.
	Model        []byte
	ModelEscaped bool
	// HasError: a non-null top-level error member.
	HasError bool
	// KeepPrompt: the usage carried no input count (a Messages API
	// message_delta's usage has output_tokens alone), so the one read
	// before stands.
	KeepPrompt bool
	// HasFinish: some choice carries a non-empty finish_reason string
	// ("stop", "length"): the server says the sequence ended, so a stream
	// that then closes without [DONE] still ended on purpose.
	HasFinish bool
	// Last: the API's last event (Responses' response.completed,
	// .incomplete or .failed; Messages' message_stop): nothing follows,
	// so the reader stops there as it does at chat's [DONE], and never
	// waits on (or hands back for reuse) a connection the server may be
	// closing (llama-server closes it after a stream).
	Last bool
}

var errScan = errors.New("malformed JSON")

// scanChunk reads an OpenAI-style chunk. Semantics match decoding into
// map[string]any and looking keys up exactly (duplicate keys: the last one
// wins; keys are case-sensitive); the fuzz test holds it to that. Invalid
// JSON is an error, never a panic.
func scanChunk(data []byte) (chunkInfo, error) {
	c := chunkScan{s: scanner{b: data}}
	c.s.ws()
	if !c.s.consume('{') {
		return c.info, c.s.fail()
	}
	if err := c.s.object(c.member); err != nil {
		return chunkInfo{}, err
	}
	c.s.ws()
	if c.s.i != len(c.s.b) {
		return chunkInfo{}, c.s.fail()
	}
	return c.info, nil
}

// chunkScan is scanChunk's walk over one event: the scanner, what the
// event says so far, and the choice being read. Each member method reads
// one key's value of one object; a key read again (a duplicate) resets
// what the earlier one set, so the last one wins.
type chunkScan struct {
	s    scanner
	info chunkInfo
	ch   choiceScan
}

// choiceScan is what one element of choices says.
type choiceScan struct {
	text, content, rc, reasoning, msg, msgRC, msgR, tools, finish bool
	// The raw strings of text, delta.content and message.content
	// (the last of duplicate keys, as for the flags).
	textRaw, contentRaw, msgRaw []byte
	textEsc, contentEsc, msgEsc bool
}

// member reads a top-level member.
func (c *chunkScan) member(key []byte) error {
	switch string(key) { // no allocation: the compiler special-cases switch on string(bytes)
	case "id":
		return c.rawString(&c.info.ID, &c.info.IDEscaped)
	case "model":
		return c.rawString(&c.info.Model, &c.info.ModelEscaped)
	case "error":
		null, err := c.s.isNullThenSkip()
		c.info.HasError = !null
		return err
	case "usage":
		return c.usage()
	case "choices":
		return c.choices()
	}
	return c.s.skip()
}

// rawString reads a string's raw contents into raw and esc (nil and
// false for any other value).
func (c *chunkScan) rawString(raw *[]byte, esc *bool) error {
	*raw, *esc = nil, false
	if c.s.peek() != '"' {
		return c.s.skip()
	}
	r, e, err := c.s.str()
	if err != nil {
		return err
	}
	*raw, *esc = r, e
	return nil
}

// usage reads the top-level usage value.
func (c *chunkScan) usage() error {
	c.info.HasUsage, c.info.PromptTokens, c.info.CompletionTokens = false, 0, 0
	c.info.HasCached, c.info.CachedTokens = false, 0
	c.info.HasReasoningTokens, c.info.ReasoningTokens = false, 0
	if c.s.peek() != '{' {
		return c.s.skip()
	}
	c.info.HasUsage = true
	c.s.i++
	return c.s.object(c.usageMember)
}

func (c *chunkScan) usageMember(k []byte) error {
	switch string(k) {
	case "prompt_tokens":
		n, err := c.s.intOrNull()
		c.info.PromptTokens = n
		return err
	case "completion_tokens":
		n, err := c.s.intOrNull()
		c.info.CompletionTokens = n
		return err
	case "prompt_tokens_details":
		c.info.HasCached, c.info.CachedTokens = false, 0
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		return c.s.object(c.detailsMember)
	case "completion_tokens_details":
		c.info.HasReasoningTokens, c.info.ReasoningTokens = false, 0
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		return c.s.object(c.completionDetailsMember)
	}
	return c.s.skip()
}

// completionDetailsMember reads a member of
// usage.completion_tokens_details.
func (c *chunkScan) completionDetailsMember(k []byte) error {
	if string(k) != "reasoning_tokens" {
		return c.s.skip()
	}
	n, isNum, err := c.s.intIfNumber()
	c.info.HasReasoningTokens, c.info.ReasoningTokens = isNum, n
	return err
}

// detailsMember reads a member of usage.prompt_tokens_details.
func (c *chunkScan) detailsMember(k []byte) error {
	if string(k) != "cached_tokens" {
		return c.s.skip()
	}
	n, isNum, err := c.s.intIfNumber()
	c.info.HasCached, c.info.CachedTokens = isNum, n
	return err
}

// choices reads the top-level choices value.
func (c *chunkScan) choices() error {
	c.info.HasText, c.info.HasFinish = false, false
	c.info.HasReasoning, c.info.HasAnswer, c.info.HasToolCall = false, false, false
	c.info.ToolCalls = nil
	c.info.Text, c.info.TextEscaped = nil, false
	if c.s.peek() != '[' {
		return c.s.skip()
	}
	c.s.i++
	return c.s.array(c.choice)
}

// choice reads one element of choices into info: whether it carries
// text or a finish reason, and its answer text when no choice before it
// had one.
func (c *chunkScan) choice() error {
	if c.s.peek() != '{' {
		return c.s.skip()
	}
	c.s.i++
	c.ch = choiceScan{}
	err := c.s.object(c.choiceMember)
	ch := &c.ch
	if ch.rc || ch.reasoning || ch.msgRC || ch.msgR {
		c.info.HasReasoning = true
	}
	if ch.text || ch.content || ch.msg || ch.tools {
		c.info.HasAnswer = true
	}
	if ch.tools {
		c.info.HasToolCall = true
	}
	c.info.HasText = c.info.HasReasoning || c.info.HasAnswer
	if ch.finish {
		c.info.HasFinish = true
	}
	if c.info.Text == nil {
		switch {
		case ch.text:
			c.info.Text, c.info.TextEscaped = ch.textRaw, ch.textEsc
		case ch.content:
			c.info.Text, c.info.TextEscaped = ch.contentRaw, ch.contentEsc
		case ch.msg:
			c.info.Text, c.info.TextEscaped = ch.msgRaw, ch.msgEsc
		}
	}
	return err
}

func (c *chunkScan) choiceMember(k []byte) error {
	ch := &c.ch
	switch string(k) {
	case "finish_reason":
		var err error
		ch.finish, err = c.s.nonEmptyString()
		return err
	case "text":
		var err error
		ch.textRaw, ch.textEsc, err = c.s.stringOrSkip()
		ch.text = len(ch.textRaw) > 0
		return err
	case "delta":
		ch.content, ch.rc, ch.reasoning, ch.tools = false, false, false, false
		ch.contentRaw, ch.contentEsc = nil, false
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		return c.s.object(c.deltaMember)
	case "message":
		ch.msg, ch.msgRC, ch.msgR, ch.tools = false, false, false, false
		ch.msgRaw, ch.msgEsc = nil, false
		if c.s.peek() != '{' {
			return c.s.skip()
		}
		c.s.i++
		return c.s.object(c.messageMember)
	}
	return c.s.skip()
}

func (c *chunkScan) deltaMember(k []byte) error {
	ch := &c.ch
	var err error
	switch string(k) {
	case "content":
		ch.contentRaw, ch.contentEsc, err = c.s.stringOrSkip()
		ch.content = len(ch.contentRaw) > 0
	case "reasoning_content":
		ch.rc, err = c.s.nonEmptyString()
	case "reasoning":
		ch.reasoning, err = c.s.nonEmptyString()
	case "tool_calls":
		ch.tools, err = c.toolCalls()
	default:
		err = c.s.skip()
	}
	return err
}

// messageMember reads a member of a whole answer's message: its
// content, its reasoning under either engine's name, its tool calls.
func (c *chunkScan) messageMember(k []byte) error {
	ch := &c.ch
	var err error
	switch string(k) {
	case "content":
		ch.msgRaw, ch.msgEsc, err = c.s.stringOrSkip()
		ch.msg = len(ch.msgRaw) > 0
	case "reasoning_content":
		ch.msgRC, err = c.s.nonEmptyString()
	case "reasoning":
		ch.msgR, err = c.s.nonEmptyString()
	case "tool_calls":
		ch.tools, err = c.toolCalls()
	default:
		err = c.s.skip()
	}
	return err
}

// scanner is a minimal validating JSON walker over a byte slice.
type scanner struct {
	b     []byte
	i     int
	depth int
}

const maxDepth = 512

func (s *scanner) fail() error {
	return errScan
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// object reads members after the opening brace, calling member with each
// key; member must consume the value.
func (s *scanner) object(member func(key []byte) error) error {
	s.depth++
	if s.depth > maxDepth {
		return s.fail()
	}
	defer func() { s.depth-- }()
	if s.consume('}') {
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail()
		}
		key, esc, err := s.str()
		if err != nil {
			return err
		}
		if esc {
			// An escaped key never equals one of ours byte for byte; decode
			// it so that "t\u0065xt" still means "text", as encoding/json does.
			uq, err := unquoteJSON(key)
			if err != nil {
				return s.fail()
			}
			key = []byte(uq)
		}
		if !s.consume(':') {
			return s.fail()
		}
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return nil
		}
		return s.fail()
	}
}

// array reads elements after the opening bracket; elem must consume one value.
func (s *scanner) array(elem func() error) error {
	s.depth++
	if s.depth > maxDepth {
		return s.fail()
	}
	defer func() { s.depth-- }()
	if s.consume(']') {
		return nil
	}
	for {
		s.ws()
		if err := elem(); err != nil {
			return err
		}
		if s.consume(',') {
			continue
		}
		if s.consume(']') {
			return nil
		}
		return s.fail()
	}
}

// str reads a string at s.i and returns its raw contents (between the
// quotes) and whether it holds escapes or non-ASCII bytes (either way the
// raw bytes may differ from the decoded string). It validates escapes and rejects
// control characters, as JSON requires.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.fail()
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(s.b) {
				return nil, false, s.fail()
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(s.b) {
					return nil, false, s.fail()
				}
				for _, h := range s.b[j+2 : j+6] {
					if !isHex(h) {
						return nil, false, s.fail()
					}
				}
				j += 5
			default:
				return nil, false, s.fail()
			}
		case c < 0x20:
			return nil, false, s.fail()
		case c >= 0x80:
			// Possibly invalid UTF-8, which encoding/json replaces with
			// U+FFFD: let the slow path decode it the same way.
			escaped = true
		}
	}
	return nil, false, s.fail()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// nonEmptyString reads any value and reports whether it is a string with at
// least one character (null, numbers and "" are empty).
func (s *scanner) nonEmptyString() (bool, error) {
	if s.peek() != '"' {
		return false, s.skip()
	}
	raw, _, err := s.str()
	return len(raw) > 0, err
}

// stringOrSkip reads any value: a string's raw contents and whether they
// need unquoting (str), nil for anything else.
func (s *scanner) stringOrSkip() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, s.skip()
	}
	return s.str()
}

// isNullThenSkip reports whether the value is the literal null, consuming it.
func (s *scanner) isNullThenSkip() (bool, error) {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true, nil
	}
	return false, s.skip()
}

// intOrNull reads a number (truncated toward zero, as a float64 to int
// conversion does) or null (0); any other value is skipped and reads as 0.
func (s *scanner) intOrNull() (int, error) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.skip()
	}
	start := s.i
	if err := s.number(); err != nil {
		return 0, err
	}
	num := s.b[start:s.i]
	n, simple := 0, len(num) <= 15
	for _, d := range num {
		if d < '0' || d > '9' {
			simple = false
			break
		}
		n = n*10 + int(d-'0')
	}
	if simple {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		// Out of range: encoding/json refuses it too.
		return 0, s.fail()
	}
	if f > 1<<53 || f < -(1<<53) {
		return 0, nil // nonsense counts; treat as unknown
	}
	return int(f), nil
}

// intIfNumber reads a value and reports whether it is a number (read as
// intOrNull reads one); any other value is skipped.
func (s *scanner) intIfNumber() (int, bool, error) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, false, s.skip()
	}
	n, err := s.intOrNull()
	return n, err == nil, err
}

func (s *scanner) number() error {
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	switch {
	case j < len(s.b) && s.b[j] == '0':
		j++
	case j < len(s.b) && s.b[j] >= '1' && s.b[j] <= '9':
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
	default:
		return s.fail()
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		if j == k {
			return s.fail()
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		if j == k {
			return s.fail()
		}
	}
	s.i = j
	return nil
}

// skip consumes one value of any type.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '{':
		s.i++
		return s.object(func([]byte) error { return s.skip() })
	case '[':
		s.i++
		return s.array(s.skip)
	case '"':
		_, _, err := s.str()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return s.number()
		}
		return s.fail()
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return nil
	}
	return s.fail()
}

// unquoteJSON decodes the raw contents of a JSON string (rare path: only
// strings with escapes come here).
func unquoteJSON(raw []byte) (string, error) {
	buf := make([]byte, 0, len(raw)+2)
	buf = append(buf, '"')
	buf = append(buf, raw...)
	buf = append(buf, '"')
	var out string
	err := json.Unmarshal(buf, &out)
	return out, err
}
