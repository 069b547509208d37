package limit

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// When the process runs out of file descriptors, accept fails with EMFILE
// and the client waits in the kernel's queue, unanswered, until a
// descriptor frees up; net/http only backs off and tries again. A
// Listener keeps one descriptor in reserve for that moment: it lets it go,
// accepts the waiting client with it, turns it away with a 503 like any
// connection beyond the caps, and takes the reserve back. Transfers in
// flight go on; nothing restarts.

// reserve is a descriptor held back for turning clients away.
type reserve struct{ f *os.File }

func (r *reserve) take() {
	if r.f == nil {
		r.f, _ = os.Open(os.DevNull)
	}
}

// release gives the descriptor back to the process, and reports whether
// there was one.
func (r *reserve) release() bool {
	if r.f == nil {
		return false
	}
	r.f.Close()
	r.f = nil
	return true
}

// outOfFiles reports whether an accept failed for want of descriptors.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// shed turns away the client an accept could not take for want of
// descriptors, with the reserve's descriptor, and reports whether it did.
func (l *Listener) shed() bool {
	l.fdMu.Lock()
	defer l.fdMu.Unlock()
	if !l.spare.release() {
		l.spare.take() // perhaps some were freed meanwhile
		return false
	}
	defer l.spare.take()
	c, err := l.Listener.Accept()
	if err != nil {
		return false
	}
	if l.cfg.Refused != nil {
		l.cfg.Refused(c.RemoteAddr())
	}
	answerNow(c, l.cfg)
	return true
}

// answerNow answers 503 (on plain HTTP) and closes, in the accept loop
// itself, waiting at most a fifth of a second for the request: with no
// descriptor to spare, no other work is worth doing first, and a client
// that sends nothing must not hold the loop.
func answerNow(c net.Conn, cfg Config) {
	if cfg.Answer503 {
		answer503(c, nil, cfg.RetryAfter, 200*time.Millisecond)
		return
	}
	c.Close()
}
