package wire

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"largo"
)

// StatusError is an error that carries its own status and reason: a
// protocol's refusal that is no store's (a bad header, a missing
// credential). Wrap it with %w to keep a cause.
type StatusError struct {
	Code   int
	Reason string
}

func (e *StatusError) Error() string { return e.Reason }

// Refuse returns a StatusError.
func Refuse(code int, reason string) *StatusError { return &StatusError{Code: code, Reason: reason} }

// ErrBadCondition: a condition a write cannot apply atomically (see
// Condition).
var ErrBadCondition = errors.New("unsupported condition")

// statusTable maps each error kind to the status and the one-line reason
// a client sees, whatever protocol it speaks. The first match wins.
var statusTable = []struct {
	err    error
	code   int
	reason string
}{
	{largo.ErrReservedName, http.StatusForbidden, "hidden or reserved name: not writable"},
	{largo.ErrLocked, http.StatusLocked, "locked: another client holds a lock on this path; send its token in an If header"},
	{largo.ErrMissingFolder, http.StatusConflict, "folder does not exist"},
	{largo.ErrChanged, http.StatusConflict, "the target's folder was moved or replaced while the upload was on its way: nothing was stored; send it again"},
	{largo.ErrParentNotDir, http.StatusConflict, "a parent is a file, not a folder"},
	{ErrBadDigest, http.StatusBadRequest, "invalid Content-Digest or Repr-Digest"},
	{ErrBadCondition, http.StatusBadRequest, "unsupported condition: use If-None-Match: * or If-Match with one ETag"},
	{largo.ErrCondUnsupported, http.StatusNotImplemented, "not supported: this store cannot apply If-None-Match or If-Match to a write atomically"},
	{largo.ErrBodyTimeout, http.StatusRequestTimeout, "request body stalled"},
	{largo.ErrBodyIncomplete, http.StatusBadRequest, "request body incomplete"},
	{largo.ErrInvalidName, http.StatusBadRequest, "invalid path"},
	{largo.ErrUnsafeName, http.StatusBadRequest, "name refused: it holds invisible or direction-changing characters, or an element ends with a dot or a space"},
	{largo.ErrUnauthorized, http.StatusUnauthorized, "unauthorized: sign in (a user name and password, or a token as a bearer token or a basic-auth password)"},
	{largo.ErrNotFound, http.StatusNotFound, "not found"},
	{largo.ErrNotDir, http.StatusNotFound, "not found"},
	{largo.ErrSidecarName, http.StatusConflict, "conflict: the name would be taken for the compressed form of the file beside it (NAME.gz, NAME.br or NAME.zst beside NAME), which a drop box may not write"},
	{largo.ErrNameTaken, http.StatusPreconditionFailed, "name taken: a drop box only adds new files; send this one under another name"},
	{largo.ErrCreateOnly, http.StatusForbidden, "forbidden: a drop-box link only uploads new files into its folder"},
	{largo.ErrPermission, http.StatusForbidden, "forbidden: not allowed on this path"},
	{largo.ErrIsDir, http.StatusConflict, "is a folder"},
	{largo.ErrExist, http.StatusConflict, "already exists"},
	{largo.ErrNotEmpty, http.StatusConflict, "folder not empty"},
	{largo.ErrPrecondition, http.StatusPreconditionFailed, "precondition failed"},
	{largo.ErrTooLarge, http.StatusRequestEntityTooLarge, "too large: over the upload size limit"},
	{largo.ErrNoSpace, http.StatusInsufficientStorage, "insufficient storage"},
	{largo.ErrDigest, http.StatusBadRequest, "digest mismatch"},
	{largo.ErrUnsupported, http.StatusNotImplemented, "not supported"},
	{largo.ErrBusy, http.StatusServiceUnavailable, "busy: try again in a moment"},
	{context.Canceled, 499, "client closed request"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timed out"},
}

// Status returns the status and the one-line reason a client is answered
// with for err. Reasons are fixed phrases, never the error's text, which
// may hold local paths; a digest mismatch adds the digest computed, a
// quota's refusal the quota (largo.QuotaError).
func Status(err error) (int, string) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code, se.Reason
	}
	var qe *largo.QuotaError
	if errors.As(err, &qe) {
		return http.StatusInsufficientStorage, "insufficient storage: " + qe.Error()
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, "too large: over the upload size limit"
	}
	for _, row := range statusTable {
		if errors.Is(err, row.err) {
			var de *largo.DigestError
			if errors.As(err, &de) {
				return row.code, row.reason + ": computed " + FormatDigest(de.SHA256)
			}
			return row.code, row.reason
		}
	}
	return http.StatusInternalServerError, "internal error"
}

// Level is the level at which the server logs an answer of status code
// to a request that failed, by who caused it; ok is false for an answer
// that is the client's doing alone (4xx: a bad request, a refusal, a
// client gone), which the access line records and nothing else. A full
// disk or quota (507) is the writer's doing on a server working as it
// should: a warning for the operator, not an error of the server; so is
// a load the server sheds (503). What the server does not support (501)
// is said for information. Every other 5xx is the server's failure: an
// error.
func Level(code int) (level slog.Level, ok bool) {
	switch {
	case code < 500:
		return 0, false
	case code == http.StatusNotImplemented:
		return slog.LevelInfo, true
	case code == http.StatusInsufficientStorage, code == http.StatusServiceUnavailable:
		return slog.LevelWarn, true
	}
	return slog.LevelError, true
}
