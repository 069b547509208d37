package serve

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/filecache"
	"largo/gate"
	"largo/internal/gather"
	"largo/transfer"
	"largo/wire"
)

// A file the open-file cache keeps (Config.Cache, package filecache)
// comes with its bytes in memory and a memo of its version: its answer's
// headers are derived once per version (keptHead), not per request, and
// a plain GET or HEAD of it (no range, no condition) is answered from
// them and its bytes, without http.ServeContent's work. Any other request
// for it (a range, a condition, a compressed form) goes the way of every
// file, over its bytes in memory.

// keptHead is what the answer of a kept file's version says of it,
// shared by every request for it until the cache looks at the file again:
// net/http only reads a header's values, and these are never written.
type keptHead struct {
	contentType  []string
	etag         []string
	lastModified []string // nil: no time worth telling
	length       []string
	digest       []string // Repr-Digest, nil when none is recorded
}

// bytesRange is the value of Accept-Ranges on every file's answer.
var bytesRange = []string{"bytes"}

// keptHeadOf returns the head of the version of f, the kept file name,
// derived now if no request derived it since the cache last looked at
// the file.
func (h *Handler) keptHeadOf(r *http.Request, name string, f *filecache.File) *keptHead {
	m := f.Memo()
	if kh, ok := m.Load().(*keptHead); ok {
		return kh
	}
	in := f.Info()
	ct := contentType(in)
	if ct == "" {
		b := f.Bytes()
		ct = http.DetectContentType(b[:min(len(b), 512)])
	}
	kh := &keptHead{
		contentType: []string{ct},
		etag:        []string{in.ETag},
		length:      []string{strconv.FormatInt(in.Size, 10)},
	}
	if !in.ModTime.IsZero() && !in.ModTime.Equal(time.Unix(0, 0)) {
		kh.lastModified = []string{in.ModTime.UTC().Format(http.TimeFormat)}
	}
	sum, err := h.digests.Lookup(r.Context(), name, in.ETag)
	if err != nil {
		// Not kept: the next request asks again.
		h.log.Warn("reading a file's digest", "path", r.URL.Path, "err", err)
		return kh
	}
	if sum != nil {
		kh.digest = []string{wire.FormatDigest(sum)}
	}
	m.Store(kh)
	return kh
}

// keeper is the open-file cache as Quick asks it (filecache.Store).
type keeper interface{ Keeps(name string) bool }

// Quick reports whether r, a GET or HEAD with no body, is likely to be
// answered at once from memory: a file the open-file cache keeps, asked
// for by its path (no query, not the server's own endpoints), with no
// credential, that anyone may read. A connection's lane (package
// internal/quick) answers such requests through this handler without
// net/http's work per request; what the answer is stays this handler's
// alone.
//
// Whether a file is kept is asked only once the gate said the name may
// be read: a name its requester may not see takes net/http's way whether
// or not it is kept, so that the way an answer takes (its fields' order,
// its time, the connection's fate) tells nothing of a file it hides.
// A request with a credential takes net/http's way too: it is judged
// once, by the handler, so that a wrong one counts once.
func (h *Handler) Quick(r *http.Request) bool {
	k, ok := h.cfg.Cache.(keeper)
	if !ok || r.URL.RawQuery != "" || strings.HasPrefix(r.URL.Path, Prefix) || r.Header["Authorization"] != nil || !h.hostAllowed(r.Host) {
		return false
	}
	name, err := largo.ParseName(r.URL.Path)
	if err != nil || largo.Reserved(name) {
		return false
	}
	if h.gate.CheckName(gate.With(r.Context(), gate.Anonymous()), auth.Read, name) != nil {
		return false
	}
	return k.Keeps(name)
}

// plain reports whether r asks for a whole file with no condition: what
// a kept file's head answers alone.
func plain(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	hdr := r.Header
	for _, k := range conditionFields {
		if _, ok := hdr[k]; ok {
			return false
		}
	}
	return true
}

// conditionFields are the request fields http.ServeContent answers:
// a request with any of them goes its way.
var conditionFields = []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

// sendKept answers a plain request (see plain) for the kept file f with
// its head kh: what http.ServeContent would answer, a 200 with the file's
// validators, length and type, and its bytes in one write.
func (h *Handler) sendKept(w http.ResponseWriter, r *http.Request, name string, f *filecache.File, kh *keptHead) {
	hdr := w.Header()
	hdr["Etag"] = kh.etag
	if kh.lastModified != nil {
		hdr["Last-Modified"] = kh.lastModified
	}
	hdr["Accept-Ranges"] = bytesRange
	hdr["Content-Length"] = kh.length
	if kh.digest != nil {
		if want := r.Header["Want-Repr-Digest"]; len(want) == 0 || wire.WantsSHA256(strings.Join(want, ",")) {
			hdr["Repr-Digest"] = kh.digest
		}
	}
	if r.ProtoMajor == 1 {
		// The head and the bytes leave in one write, not two (package
		// gather): nothing waits between them.
		gather.Hold(transfer.ConnOf(r.Context()))
	}
	h.offerKept(r, name, f, kh)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		// A failed write is the transfer's to count (its outcome), as
		// http.ServeContent leaves it.
		w.Write(f.Bytes())
	}
}
