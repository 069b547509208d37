package serve

import (
	"fmt"
	"net/http"
	"strings"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/internal/reply"
	"largo/links"
	"largo/transfer"
	"largo/wire"
)

// ResumablePrefix is where Config.Resumable is mounted.
const ResumablePrefix = Prefix + "uploads/"

// ResumerPrefix is where Config.Resumer serves its upload resources.
const ResumerPrefix = ResumablePrefix + "ietf/"

// Resumer makes writes resumable: the IETF resumable-upload protocol
// (package resumable), which turns a PUT to a file, or a POST to a
// folder, into an upload that can go on after an interruption.
// Implementations must be safe for concurrent use.
type Resumer interface {
	// ServeHTTP serves the upload resources under ResumerPrefix.
	http.Handler
	// Takes reports whether the PUT or POST r asks for a resumable upload
	// in a form the resumer speaks. It reads only headers.
	Takes(r *http.Request) bool
	// Create serves a write that Takes took, after the write checks
	// (writes on, the token): name is the file of a PUT, the folder of a
	// POST. Nothing of r's body has been read.
	Create(w http.ResponseWriter, r *http.Request, name string) error
	// Target returns the file a write Takes took will store: name for a
	// PUT, the file a POST to the folder name asks for. An error is the
	// refusal Create would answer.
	Target(r *http.Request, name string) (string, error)
	// Limits returns the Upload-Limit field that the write targets
	// announce (OPTIONS).
	Limits() string
}

// writeMethods are the methods the file tree answers with writes on.
const writeMethods = readMethods + ", PUT, POST, DELETE"

// Refusals of the write front end that are no store's.
var (
	errNotForm    = wire.Refuse(http.StatusUnsupportedMediaType, "expected multipart/form-data")
	errPartialPut = wire.Refuse(http.StatusBadRequest, "Content-Range on a PUT: partial writes are not accepted; send the whole file, or resume through /_largo/uploads/ (tus)")
	errBadForm    = wire.Refuse(http.StatusBadRequest, "bad multipart form")
	errIncomplete = wire.Refuse(http.StatusBadRequest, "the request says its body is not the whole file (Upload-Complete: ?0 or Upload-Incomplete: ?1) in no resumable-upload version this server speaks: nothing stored; send the whole file, or resume with tus at "+ResumablePrefix)
)

// allow is the Allow header of the file tree.
func (h *Handler) allow() string {
	switch {
	case h.cfg.Writes != nil && h.cfg.DAV != nil:
		return writeMethods + davAllow
	case h.cfg.Writes != nil:
		return writeMethods
	case h.cfg.DAV != nil:
		return readMethods + ", PROPFIND"
	}
	return readMethods
}

// options sets what an OPTIONS answer announces to its requester: the
// methods of the file tree, its DAV classes and its upload limits;
// through a share link, only what the link allows (a read link reads,
// with PROPFIND, and takes no locks; a drop box only uploads).
func (h *Handler) options(hdr http.Header, l *links.Link) {
	allow, dav, writes := h.allow(), h.cfg.DAV != nil, h.cfg.Writes != nil
	switch {
	case l != nil && l.Kind == links.Drop:
		allow, dav = "OPTIONS, PUT, POST", false
	case l != nil:
		allow, writes = readMethods, false
		if dav {
			allow += ", PROPFIND"
		}
	}
	hdr.Set("Allow", allow)
	if dav {
		davHeaders(hdr, writes)
	}
	if writes && h.cfg.Resumer != nil {
		hdr.Set("Upload-Limit", h.cfg.Resumer.Limits())
	}
}

// write checks a write in the order that lets a refused client keep its
// body: writes on, a browser's origin, then the permission (write, or
// delete); the pipeline then checks the name, the condition, the size and
// the space. Nothing reads r.Body before these pass (Go sends 100
// Continue on the first read).
func (h *Handler) write(w http.ResponseWriter, r *http.Request, name string) error {
	if h.cfg.Writes == nil {
		return &reply.MethodError{Allow: readMethods}
	}
	if err := h.sameOrigin(r); err != nil {
		return err
	}
	if r.Method == http.MethodPost {
		// A form's files are decided one by one as they come; first, the
		// folder must take new files at all, before the body is read.
		if err := h.gate.Check(r.Context(), auth.Write, largo.Join(name, gate.NewName), false); err != nil {
			return err
		}
	}
	if h.cfg.DAV != nil {
		// Lock tokens are read out of the If header: only out of one
		// that says what its client meant.
		if err := wire.CheckIf(r.Header); err != nil {
			return err
		}
	}
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/") {
		return fmt.Errorf("%s: PUT to a folder path: %w", name, largo.ErrIsDir)
	}
	if r.Method != http.MethodDelete {
		if h.cfg.Resumer != nil && h.cfg.Resumer.Takes(r) {
			return h.resume(w, r, name)
		}
		if wire.Incomplete(r.Header) {
			// A part stored as the whole would be data lost.
			return errIncomplete
		}
	}
	switch r.Method {
	case http.MethodPut:
		return h.put(w, r, name)
	case http.MethodPost:
		return h.postForm(w, r, name)
	}
	return h.remove(w, r, name)
}

// resume hands a write the Resumer took to it. The pipeline's admission
// of the upload, which the Resumer asks before it answers anything, is
// where the gate decides it.
//
// Through a trusted proxy, the 104 that gives the upload's URL before its
// body is read is left out: nginx takes an interim answer for the final
// one and stops passing the body on, which would stall the upload. The
// upload is then stored as a whole write would be, its URL in the final
// answer.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, name string) error {
	if _, proxied := auth.Proxy(r); proxied {
		w = noInterim{w}
	}
	return h.cfg.Resumer.Create(w, r, name)
}

// noInterim is a response that sends no interim (1xx) answer.
type noInterim struct{ http.ResponseWriter }

func (w noInterim) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the response beneath, for its
// deadlines and flushes.
func (w noInterim) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resumable puts the front door's checks in front of the resumable
// upload handler: a browser's origin (a CORS preflight passes only for
// an origin listed in Config.CORSOrigins). Who may create an upload is
// decided by the gate at its admission; who may go on with one, by the
// handler, which keeps each upload's creator.
func (h *Handler) resumable(next http.Handler) http.Handler {
	return h.errs.Handler(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !wire.OriginListed(h.cfg.CORSOrigins, r.Header.Get("Origin")) {
				return wire.ErrCrossSite // no preflight passes unless its origin is listed
			}
			next.ServeHTTP(w, r)
			return nil
		}
		if err := h.sameOrigin(r); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// hasBody reports whether r may carry a body that a handler will read.
func hasBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodPatch:
		return r.Body != nil && r.Body != http.NoBody
	}
	return false
}

// writeOutcome is how a request with a body ended: how reading it ended
// if that went wrong, else by its status.
func writeOutcome(tw *transfer.Response, body *transfer.Body) transfer.Outcome {
	if o := body.Outcome(); o != transfer.Complete {
		return o
	}
	if o := tw.Outcome(http.MethodPut); o != transfer.Complete {
		return o
	}
	switch code := tw.Status(); {
	case code >= 500:
		if code == http.StatusInsufficientStorage {
			return transfer.Rejected
		}
		return transfer.Error
	case code >= 400:
		return transfer.Rejected
	}
	return transfer.Complete
}
