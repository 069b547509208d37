package client

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// localError is a failure on this machine, such as a full disk: retrying
// the network does not help.
type localError struct{ err error }

func (e localError) Error() string { return e.err.Error() }
func (e localError) Unwrap() error { return e.err }

// transientError is a protocol hiccup worth another attempt: a short body,
// a range the server got wrong.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

func transient(format string, args ...any) error {
	return transientError{fmt.Errorf(format, args...)}
}

// errStalled ends an attempt that moved no byte for the stall timeout.
var errStalled = errors.New("no data moved within the stall timeout")

// retryable reports whether another attempt may succeed where err failed.
func retryable(err error) bool {
	var (
		le localError
		te transientError
		se *StatusError
	)
	switch {
	case errors.As(err, &le), errors.Is(err, ErrDigest), errors.Is(err, ErrResumable), errors.Is(err, errListedSize):
		return false
	case errors.As(err, &te), errors.Is(err, errStalled), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &se):
		// 507 is a full store or a quota: waiting a few seconds does not
		// free either.
		return se.Code == http.StatusRequestTimeout || se.Code == http.StatusTooManyRequests ||
			se.Code >= 500 && se.Code != http.StatusNotImplemented && se.Code != http.StatusHTTPVersionNotSupported &&
				se.Code != http.StatusInsufficientStorage
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return false
	}
	var (
		ue *url.Error
		ne net.Error
	)
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)
}

// retrier counts the retries of one transfer.
type retrier struct {
	c    *Client
	left int
	wait time.Duration
}

func (c *Client) retrier() *retrier {
	r := &retrier{c: c}
	r.progressed()
	return r
}

// progressed restarts the count after an attempt that moved bytes.
func (r *retrier) progressed() {
	r.left = r.c.Retries
	r.wait = r.c.Backoff
	if r.wait <= 0 {
		r.wait = time.Second
	}
}

// again decides after a failed attempt: nil means try again (its wait is
// over), anything else is the error that ends the transfer.
func (r *retrier) again(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return resumable(context.Cause(ctx))
	}
	if !retryable(err) {
		return err
	}
	if r.left <= 0 {
		if r.c.Retries == 0 {
			return resumable(err)
		}
		return resumable(fmt.Errorf("gave up after %d retries: %w", r.c.Retries, err))
	}
	r.left--
	wait := r.wait
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		wait = se.RetryAfter
	}
	wait = min(wait, r.maxBackoff())
	r.c.logf("%v; retrying in %s (%d left)", err, wait, r.left)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return resumable(context.Cause(ctx))
	case <-t.C:
	}
	r.wait = min(2*r.wait, r.maxBackoff())
	return nil
}

func (r *retrier) maxBackoff() time.Duration {
	if r.c.MaxBackoff > 0 {
		return r.c.MaxBackoff
	}
	return 30 * time.Second
}

// retryAfter reads a Retry-After header given in seconds.
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// watchdog cancels an attempt's context with errStalled when no byte has
// moved for the stall timeout.
type watchdog struct {
	t      *time.Timer
	d      time.Duration
	cancel context.CancelCauseFunc
}

// watch returns the context of one attempt and its watchdog; stop releases
// both.
func (c *Client) watch(ctx context.Context) (context.Context, *watchdog) {
	actx, cancel := context.WithCancelCause(ctx)
	d := c.stallTimeout()
	return actx, &watchdog{t: time.AfterFunc(d, func() { cancel(errStalled) }), d: d, cancel: cancel}
}

func (w *watchdog) touch() { w.t.Reset(w.d) }

func (w *watchdog) stop() {
	w.t.Stop()
	w.cancel(nil)
}

// cause returns the stall error in place of the cancellation it caused.
func cause(actx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(actx), errStalled) {
		return errStalled
	}
	return err
}

// touchReader touches a watchdog on every read that moves bytes and
// reports them to a Progress.
type touchReader struct {
	r    io.Reader
	w    *watchdog
	prog Progress
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.w.touch()
		if t.prog != nil {
			t.prog.Add(int64(n))
		}
	}
	return n, err
}
