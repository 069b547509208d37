// Package reply answers the requests whose handlers fail, for every HTTP
// front end of largo's own: the file tree (package serve) and the folder
// page's API (package pageapi). A handler returns its error (Func) rather
// than writing it, and one place (Errors.Fail) turns the error into the
// status and the one-line reason of the one table (wire.Status), with the
// headers that go with them: Allow for a method the resource does not
// take (MethodError), the sign-in challenge for a 401, Retry-After for a
// 429 or a 503, the digest computed for a digest that did not match. The
// client sees the reason; the log sees the cause.
//
// Once a response has begun, its status is out: the only honest signal
// left is to cut the connection (net/http's ErrAbortHandler, which the
// front end recovers), so that the client sees a short body instead of a
// complete-looking wrong one.
//
// It is apart from package wire, HTTP's vocabulary, because it acts: it
// logs, and it cuts connections through transfer.Response; wire only
// parses and formats. Its functions keep no state and are safe for
// concurrent use.
package reply

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"largo"
	"largo/auth"
	"largo/transfer"
	"largo/wire"
)

// Func is an HTTP handler that returns its error instead of writing it.
type Func func(http.ResponseWriter, *http.Request) error

// MethodError is a method the resource does not allow: 405, with Allow
// naming the methods it does.
type MethodError struct{ Allow string }

func (e *MethodError) Error() string { return "method not allowed" }

// ErrNoEndpoint is a path under the reserved prefix that no route takes.
var ErrNoEndpoint = fmt.Errorf("no such endpoint: %w", largo.ErrNotFound)

// Errors answers the errors of handlers. The zero value discards its
// log.
type Errors struct {
	// Log receives the causes of failures (5xx), of quotas' refusals
	// and of cut responses; nil discards them.
	Log *slog.Logger
}

// Handler turns f into an http.HandlerFunc: its error is answered by
// Fail.
func (e Errors) Handler(f Func) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			e.Fail(w, r, err)
		}
	}
}

// Fail answers err. When the response has already begun (w is a
// transfer.Response with a status), it cuts the connection instead, by
// the http.ErrAbortHandler panic, unless the connection failed or the
// client left already; the log says why.
func (e Errors) Fail(w http.ResponseWriter, r *http.Request, err error) {
	log := e.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if tw, ok := w.(*transfer.Response); ok && tw.Status() != 0 {
		if tw.Err() != nil || r.Context().Err() != nil {
			return // the connection failed or the client left: nothing to cut
		}
		log.Warn("response cut", "method", r.Method, "path", r.URL.Path, "sent", tw.Written(), "err", err)
		panic(http.ErrAbortHandler)
	}
	code, msg := Status(err)
	var qe *largo.QuotaError
	switch {
	case errors.As(err, &qe):
		log.Info("write refused by a quota", "method", r.Method, "path", r.URL.Path, "err", err) // the client's doing, not a failure
	default:
		if level, ok := wire.Level(code); ok {
			log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
		}
	}
	var de *largo.DigestError
	if errors.As(err, &de) {
		w.Header().Set("Repr-Digest", wire.FormatDigest(de.SHA256))
	}
	var me *MethodError
	switch {
	case errors.As(err, &me):
		w.Header().Set("Allow", me.Allow)
	case code == http.StatusUnauthorized:
		auth.Challenge(w.Header(), r)
	case code == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", auth.RetryAfter)
	case code == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	Text(w, code, msg)
}

// Status returns the status and the one-line reason for err: a method
// the resource does not allow, else the row of the one status table
// (wire.Status).
func Status(err error) (int, string) {
	var me *MethodError
	if errors.As(err, &me) {
		return http.StatusMethodNotAllowed, "method not allowed"
	}
	return wire.Status(err)
}

// Text answers with a status and a one-line plain-text reason, dropping
// the headers that described the body it replaces.
func Text(w http.ResponseWriter, code int, reason string) {
	h := w.Header()
	for _, k := range []string{"Content-Encoding", "Content-Length", "ETag", "Last-Modified", "Content-Range", "Content-Disposition"} {
		h.Del(k)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(reason + "\n"))
}
