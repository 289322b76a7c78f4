package loadgen

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/benchrun/benchrun/internal/httpsafe"
)

// send hands a request to the transport itself; what it returns must read
// as Client.Do's answer for the same client: redirects refused the same,
// an answer that is no redirect returned, errors in Client.Do's words.
func TestSendAnswersAsClientDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/found":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		case "/see-other":
			http.Redirect(w, r, "http://example.invalid/x", http.StatusSeeOther)
		case "/permanent":
			http.Redirect(w, r, "/p", http.StatusPermanentRedirect)
		case "/no-location":
			w.WriteHeader(http.StatusFound)
		case "/choices":
			w.Header().Set("Location", "/a")
			w.WriteHeader(http.StatusMultipleChoices)
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	client := NewHTTPClient(4)
	defer client.CloseIdleConnections()
	do := func(url string, direct bool) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		if direct {
			return send(client, req)
		}
		return client.Do(req)
	}
	for _, url := range []string{srv.URL + "/", srv.URL + "/found", srv.URL + "/see-other", srv.URL + "/permanent", srv.URL + "/no-location", srv.URL + "/choices", closed + "/"} {
		want, wantErr := do(url, false)
		got, gotErr := do(url, true)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Errorf("%s: send's error %v, Client.Do's %v", url, gotErr, wantErr)
		}
		var wantRE, gotRE *httpsafe.RedirectError
		if errors.As(wantErr, &wantRE) != errors.As(gotErr, &gotRE) || (wantRE != nil && *wantRE != *gotRE) {
			t.Errorf("%s: send's redirect %+v, Client.Do's %+v", url, gotRE, wantRE)
		}
		if (want == nil) != (got == nil) {
			t.Errorf("%s: send's answer %v, Client.Do's %v", url, got, want)
		}
		for _, r := range []*http.Response{want, got} {
			if r != nil && r.Body != nil {
				r.Body.Close()
			}
		}
		if want != nil && got != nil && want.StatusCode != got.StatusCode {
			t.Errorf("%s: send's status %d, Client.Do's %d", url, got.StatusCode, want.StatusCode)
		}
	}
}
