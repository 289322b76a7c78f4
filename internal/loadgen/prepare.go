package loadgen

// encodedBody is a request body built ahead of its send.
type encodedBody struct {
	body        []byte
	contentType string
	err         error
}

// prepare builds req's body for t now, so that the open loop does it
// while it waits for the request's scheduled time instead of after it:
// the encoding then never counts in the send lag.
func (t *Target) prepare(req *Request) {
	b, ct, err := t.body(*req)
	req.encoded = &encodedBody{body: b, contentType: ct, err: err}
}

// bodyFor is req's body for t: the one prepare built, else built now.
func (req *Request) bodyFor(t *Target) ([]byte, string, error) {
	if e := req.encoded; e != nil {
		return e.body, e.contentType, e.err
	}
	return t.body(*req)
}

// tokenCapacity is the room Do gives a stream's token stamps up front:
// a forced output length (ExpectTokens) is how many events can come at
// most, so the slice is made once instead of grown (seven allocations
// and copies for 100 tokens); without one it grows as events arrive.
func tokenCapacity(req Request) int { return min(max(req.ExpectTokens, 0), 8192) }
