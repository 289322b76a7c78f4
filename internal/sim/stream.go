package sim

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// eventStream is where a streamed response goes: net/http's chunked
// writer, or, with Config.CloseAfterStream, the hijacked TCP connection, on
// which the simulator writes HTTP/1.1 itself so that it can close the
// connection after the last chunk while the headers promise keep-alive, as
// llama-server does.
type eventStream struct {
	s       *Server
	w       http.ResponseWriter
	flusher http.Flusher
	conn    net.Conn // non-nil when hijacked
	pending []byte   // hijacked: the status line and headers, sent with the first write
	buf     []byte
	closed  bool
}

// lingerAfterFIN is how long a hijacked connection stays half-open after
// the simulator's FIN, so that the client reads the FIN (EOF) before any
// RST its unread next request would cause.
const lingerAfterFIN = 100 * time.Millisecond

func (s *Server) openStream(w http.ResponseWriter) *eventStream {
	o := &eventStream{s: s, w: w}
	h := w.Header()
	h.Set("Content-Type", s.persona.streamType)
	h.Set("Cache-Control", "no-cache")
	if s.cfg.CloseAfterStream {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			o.conn = conn
			h.Set("Connection", "keep-alive")
			h.Set("Keep-Alive", "timeout=5, max=100")
			h.Set("Transfer-Encoding", "chunked")
			var b bytes.Buffer
			b.WriteString("HTTP/1.1 200 OK\r\n")
			_ = h.Write(&b)
			b.WriteString("\r\n")
			o.pending = b.Bytes()
			return o
		}
		// Not HTTP/1 (or wrapped without Hijacker): serve it normally.
	}
	o.flusher, _ = w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	return o
}

// write sends b as one flushed piece (one chunk on a hijacked
// connection; an empty b sends only the headers still pending).
func (o *eventStream) write(b []byte) error {
	if o.conn == nil {
		if _, err := o.w.Write(b); err != nil {
			return err
		}
		if o.flusher != nil {
			o.flusher.Flush()
		}
		return nil
	}
	o.buf = append(o.buf[:0], o.pending...)
	o.pending = nil
	if len(b) > 0 {
		o.buf = strconv.AppendInt(o.buf, int64(len(b)), 16)
		o.buf = append(o.buf, "\r\n"...)
		o.buf = append(o.buf, b...)
		o.buf = append(o.buf, "\r\n"...)
	}
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.conn.Write(o.buf)
	return err
}

// abort cuts the connection with no clean end. On net/http's writer it
// does not return (the handler is aborted).
func (o *eventStream) abort() {
	if o.conn == nil {
		abortConn()
	}
	o.closeNow()
}

func (o *eventStream) closeNow() {
	if !o.closed {
		o.closed = true
		o.conn.Close()
	}
}

// end finishes the response cleanly. net/http writes the terminating chunk
// when the handler returns; on a hijacked connection end writes it, waits
// CloseAfterStreamDelay and closes the connection (FIN, then a full close
// a little later), never reading the next request sent on it.
func (o *eventStream) end() error {
	if o.conn == nil || o.closed {
		return nil
	}
	_, err := o.conn.Write(append(o.pending, "0\r\n\r\n"...))
	o.pending = nil
	if err != nil {
		o.closeNow()
		return err
	}
	if d := o.s.cfg.CloseAfterStreamDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-o.s.closed.Done():
		}
		t.Stop()
	}
	o.closed = true
	if hc, ok := o.conn.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		time.AfterFunc(lingerAfterFIN, closeConn(o.conn))
		return nil
	}
	return o.conn.Close()
}

func closeConn(c net.Conn) func() { return func() { c.Close() } }

// release closes a hijacked connection that no path ended (a write error,
// a client gone): the handler owns it and must not leak it.
func (o *eventStream) release() {
	if o.conn != nil {
		o.closeNow()
	}
}
