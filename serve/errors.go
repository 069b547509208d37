package serve

import (
	"errors"
	"net/http"

	"largo/wire"
)

// readMethods are the methods the file tree answers without writes.
const readMethods = "GET, HEAD, OPTIONS"

// methodError is a method the resource does not allow.
type methodError struct{ allow string }

func (e *methodError) Error() string { return "method not allowed" }

// status returns the status and reason for err: a method the resource
// does not allow, else the row of the one status table (wire.Status).
func status(err error) (int, string) {
	var me *methodError
	if errors.As(err, &me) {
		return http.StatusMethodNotAllowed, "method not allowed"
	}
	return wire.Status(err)
}

// allowed returns the Allow header for a methodError.
func allowed(err error) string {
	var me *methodError
	if errors.As(err, &me) {
		return me.allow
	}
	return readMethods
}

// writeError answers with a status and a one-line plain-text reason.
func writeError(w http.ResponseWriter, code int, reason string) {
	h := w.Header()
	for _, k := range []string{"Content-Encoding", "Content-Length", "ETag", "Last-Modified", "Content-Range", "Content-Disposition"} {
		h.Del(k)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(reason + "\n"))
}
