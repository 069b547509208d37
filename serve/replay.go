package serve

import (
	"context"
	"net/http"
	"time"

	"largo/filecache"
	"largo/internal/quick"
	"largo/pace"
	"largo/transfer"
)

// A kept file's whole answer to anyone is the same answer to the same
// question until the file or a decision about it changes: sendKept
// offers it to the connection's lane (package internal/quick), which
// sends it again, with a new Date, to a request that asks the same thing
// in the same plain words (no credential, no condition, no range, no
// encoding, no origin), without parsing the request or running the
// handler. Before each such answer the lane asks keptAnswer.Still,
// which asks the gate and the open-file cache what this handler's own
// path would ask (may anyone read the name, is it redirected, which
// version of the file is kept) and says yes only for the very version
// whose answer was kept; it logs and counts each answer as front does.

// keptAnswer is the answer of a kept file's version to anyone (Still).
type keptAnswer struct {
	h    *Handler
	name string
	f    *filecache.File
	kh   *keptHead
}

var _ quick.Kept = (*keptAnswer)(nil)

// offerKept offers the answer being written to r, a plain request for
// the kept file f (whose head is kh), for the lane to send again: when
// the request was anyone's over HTTP/1.1 and nothing but the file, its
// version and the gate's decisions made the answer (no share link, no
// bandwidth cap).
func (h *Handler) offerKept(r *http.Request, name string, f *filecache.File, kh *keptHead) {
	if r.ProtoMajor != 1 || h.pacesAnyone() || viewOf(r) != nil || r.URL.RawQuery != "" || !principal(r).IsAnonymous() {
		return
	}
	if _, ok := r.Header["Want-Repr-Digest"]; ok {
		return
	}
	quick.Offer(transfer.ConnOf(r.Context()), &keptAnswer{h: h, name: name, f: f, kh: kh})
}

// pacesAnyone reports whether a bandwidth cap applies to anyone's
// downloads: one per transfer or per address (the caps per user and per
// link are not anyone's).
func (h *Handler) pacesAnyone() bool {
	l := h.cfg.Rates
	return l != nil && (l.Default(pace.Transfer) > 0 || l.Default(pace.Address) > 0)
}

// Body implements quick.Kept.
func (a *keptAnswer) Body() []byte { return a.f.Bytes() }

// Still implements quick.Kept: the server takes requests, host is one
// it serves, anyone may read the name and is not redirected, and the
// file's version kept now is the one whose answer was kept, its head
// unchanged.
func (a *keptAnswer) Still(host, _ string) bool {
	h := a.h
	if h.draining.Load() || h.pacesAnyone() || !h.hostAllowed(host) {
		return false
	}
	f, err := h.reads.Open(h.anyone, a.name)
	if err != nil {
		return false
	}
	defer f.Close()
	k, ok := f.(*filecache.File)
	if !ok || k.Memo() != a.f.Memo() || k.Memo().Load() != a.kh || !sameBytes(k.Bytes(), a.f.Bytes()) {
		return false
	}
	return !h.gate.Redirected(h.anyone, a.name)
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Served implements quick.Kept: the metrics and the access line of one
// answer, as front writes them.
func (a *keptAnswer) Served(method, target, remote string, sent int64, took time.Duration, err error) {
	h := a.h
	h.obs.TransferStarted()
	if sent > 0 {
		h.sent(sent)
	}
	outcome := transfer.Complete
	if err != nil {
		outcome = transfer.Classify(err)
	}
	h.obs.TransferEnded(string(outcome))
	l := accessLine{
		at:       h.cfg.Now(),
		method:   method,
		path:     target,
		status:   http.StatusOK,
		bytes:    sent,
		duration: took,
		client:   remote,
		outcome:  string(outcome),
	}
	if err != nil {
		l.err = err.Error()
	}
	h.writeLine(context.Background(), &l)
}
