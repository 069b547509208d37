package serve

import (
	"context"
	"errors"
	"net/http"

	"largo"
)

// readMethods are the methods the file tree answers without writes.
const readMethods = "GET, HEAD, OPTIONS"

// statusTable maps each largo error kind to the status and the one-line
// reason a client sees. The first match wins.
var statusTable = []struct {
	err    error
	code   int
	reason string
}{
	{errUnauthorized, http.StatusUnauthorized, "unauthorized: send the token as a bearer token or a basic-auth password"},
	{errReservedWrite, http.StatusForbidden, "hidden or reserved name: not writable"},
	{errMissingFolder, http.StatusConflict, "folder does not exist"},
	{errParentNotDir, http.StatusConflict, "a parent is a file, not a folder"},
	{largo.ErrBadDigest, http.StatusBadRequest, "invalid Content-Digest or Repr-Digest"},
	{errBadCondition, http.StatusBadRequest, "unsupported condition: use If-None-Match: * or If-Match with one ETag"},
	{errCondUnsupported, http.StatusNotImplemented, "not supported: this store cannot apply If-None-Match or If-Match to a write atomically"},
	{errNotForm, http.StatusUnsupportedMediaType, "expected multipart/form-data"},
	{errPartialPut, http.StatusBadRequest, "Content-Range on a PUT: partial writes are not accepted; send the whole file, or resume through /_largo/uploads/ (tus)"},
	{errBadForm, http.StatusBadRequest, "bad multipart form"},
	{errBodyTimeout, http.StatusRequestTimeout, "request body stalled"},
	{errBodyIncomplete, http.StatusBadRequest, "request body incomplete"},
	{largo.ErrInvalidName, http.StatusBadRequest, "invalid path"},
	{largo.ErrNotFound, http.StatusNotFound, "not found"},
	{largo.ErrNotDir, http.StatusNotFound, "not found"},
	{largo.ErrPermission, http.StatusForbidden, "permission denied"},
	{largo.ErrIsDir, http.StatusConflict, "is a folder"},
	{largo.ErrExist, http.StatusConflict, "already exists"},
	{largo.ErrNotEmpty, http.StatusConflict, "folder not empty"},
	{largo.ErrPrecondition, http.StatusPreconditionFailed, "precondition failed"},
	{largo.ErrTooLarge, http.StatusRequestEntityTooLarge, "too large: over the upload size limit"},
	{largo.ErrNoSpace, http.StatusInsufficientStorage, "insufficient storage"},
	{largo.ErrDigest, http.StatusBadRequest, "digest mismatch"},
	{largo.ErrUnsupported, http.StatusNotImplemented, "not supported"},
	{context.Canceled, 499, "client closed request"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timed out"},
}

// statusError is an error with its own status and reason, for failures
// that are not a store's (a bad header, a missing token).
type statusError struct {
	code   int
	reason string
}

func (e *statusError) Error() string { return e.reason }

// detailError adds a detail for the client to the reason of its error's
// row, such as the digest the server computed.
type detailError struct {
	err    error
	detail string
}

func (e *detailError) Error() string { return e.err.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.err }

// methodError is a method the resource does not allow.
type methodError struct{ allow string }

func (e *methodError) Error() string { return "method not allowed" }

// status returns the status and reason for err. Reasons of store errors
// are fixed phrases, never the error text, which may hold local paths.
func status(err error) (int, string) {
	var se *statusError
	if errors.As(err, &se) {
		return se.code, se.reason
	}
	var me *methodError
	if errors.As(err, &me) {
		return http.StatusMethodNotAllowed, "method not allowed"
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, "too large: over the upload size limit"
	}
	for _, row := range statusTable {
		if errors.Is(err, row.err) {
			var de *detailError
			if errors.As(err, &de) {
				return row.code, row.reason + ": " + de.detail
			}
			return row.code, row.reason
		}
	}
	return http.StatusInternalServerError, "internal error"
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
