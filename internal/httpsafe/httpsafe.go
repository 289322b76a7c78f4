// Package httpsafe holds the rules every HTTP client of benchrun keeps
// toward servers it does not control.
package httpsafe

import (
	"fmt"
	"net/http"
)

// RedirectError is a redirect benchrun did not follow.
type RedirectError struct {
	Status   int
	Location string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected (HTTP %d) to %s: benchrun follows no redirect (a redirect would measure, and send the plan's headers to, another server); point the URL at the server itself", e.Status, e.Location)
}

// NoRedirects is an http.Client's CheckRedirect that follows none: the
// request fails with a RedirectError naming where the server pointed.
// A benchmark that followed a 307 measured another server as `ok`, and
// sent it the plan's API key.
func NoRedirects(req *http.Request, _ []*http.Request) error {
	e := &RedirectError{Location: req.URL.Redacted()}
	if req.Response != nil {
		e.Status = req.Response.StatusCode
	}
	return e
}

// Client is the client to use where none was given: http.DefaultClient's
// settings, following no redirect.
var Client = &http.Client{CheckRedirect: NoRedirects}
