package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"largo"
	"largo/transfer"
)

// Errors of writing, each a row of the status table, wrapped with %w
// around their cause.
var (
	// ErrReservedName: a hidden name, or one under the reserved prefix.
	ErrReservedName = errors.New("hidden or reserved name")
	// ErrMissingFolder: the target's folder does not exist (and NoMkdir).
	ErrMissingFolder = errors.New("folder does not exist")
	// ErrParentNotDir: a file stands where the target's folder should.
	ErrParentNotDir = errors.New("parent is not a folder")
	// ErrBadCondition: a condition a write cannot apply atomically.
	ErrBadCondition = errors.New("unsupported condition")
	// ErrCondUnsupported: the store cannot apply conditions to writes.
	ErrCondUnsupported = errors.New("conditional writes not supported by the store")
	// ErrBodyTimeout: the client stopped sending.
	ErrBodyTimeout = errors.New("request body stalled")
	// ErrBodyIncomplete: the client's body ended early or broke.
	ErrBodyIncomplete = errors.New("request body incomplete")
	// ErrLocked: another client holds a lock on the target (WebDAV).
	ErrLocked = errors.New("locked")
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

// DigestError is a write whose bytes differ from the digest the client
// sent. It wraps largo.ErrDigest.
type DigestError struct {
	Name   string
	SHA256 []byte // what the bytes hash to
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s: %v: computed %s", e.Name, largo.ErrDigest, e.Digest())
}
func (e *DigestError) Unwrap() error { return largo.ErrDigest }

// Digest returns the computed SHA-256 as a Repr-Digest field value, which
// a front end sends back so that the client can tell what arrived.
func (e *DigestError) Digest() string { return largo.FormatDigest(e.SHA256) }

// statusTable maps each error kind to the status and the one-line reason
// a client sees, whatever protocol it speaks. The first match wins.
var statusTable = []struct {
	err    error
	code   int
	reason string
}{
	{ErrReservedName, http.StatusForbidden, "hidden or reserved name: not writable"},
	{ErrLocked, http.StatusLocked, "locked: another client holds a lock on this path; send its token in an If header"},
	{ErrMissingFolder, http.StatusConflict, "folder does not exist"},
	{ErrParentNotDir, http.StatusConflict, "a parent is a file, not a folder"},
	{largo.ErrBadDigest, http.StatusBadRequest, "invalid Content-Digest or Repr-Digest"},
	{ErrBadCondition, http.StatusBadRequest, "unsupported condition: use If-None-Match: * or If-Match with one ETag"},
	{ErrCondUnsupported, http.StatusNotImplemented, "not supported: this store cannot apply If-None-Match or If-Match to a write atomically"},
	{ErrBodyTimeout, http.StatusRequestTimeout, "request body stalled"},
	{ErrBodyIncomplete, http.StatusBadRequest, "request body incomplete"},
	{largo.ErrInvalidName, http.StatusBadRequest, "invalid path"},
	{largo.ErrUnsafeName, http.StatusBadRequest, "name refused: it holds invisible or direction-changing characters, or an element ends with a dot or a space"},
	{largo.ErrUnauthorized, http.StatusUnauthorized, "unauthorized: sign in (a user name and password, or a token as a bearer token or a basic-auth password)"},
	{largo.ErrNotFound, http.StatusNotFound, "not found"},
	{largo.ErrNotDir, http.StatusNotFound, "not found"},
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
// may hold local paths; a digest mismatch adds the digest computed.
func Status(err error) (int, string) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code, se.Reason
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, "too large: over the upload size limit"
	}
	for _, row := range statusTable {
		if errors.Is(err, row.err) {
			var de *DigestError
			if errors.As(err, &de) {
				return row.code, row.reason + ": computed " + de.Digest()
			}
			return row.code, row.reason
		}
	}
	return http.StatusInternalServerError, "internal error"
}

// BodyErr classifies an error met reading a request body: the errors of
// the pipeline's own checks pass as they are, a stalled client is
// ErrBodyTimeout, anything else ErrBodyIncomplete.
func BodyErr(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, largo.ErrTooLarge), errors.Is(err, largo.ErrNoSpace),
		errors.Is(err, ErrBodyTimeout), errors.Is(err, ErrBodyIncomplete):
		return err
	case transfer.Classify(err) == transfer.Timeout:
		return fmt.Errorf("%w: %w", ErrBodyTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrBodyIncomplete, err)
}
