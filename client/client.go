// Package client moves large files over HTTP in both directions, in a way
// that survives bad links: a transfer that stops can be started again and
// goes on from where it was.
//
// Downloads (Get, GetTree) write into FILE.part beside the target and rename
// it into place once the bytes are complete and verified. What a resume
// needs is kept in a small sidecar file, FILE.part.json, written before the
// first byte: the URL, the validator (a strong ETag, else Last-Modified),
// the size, the server's digest and, for segmented downloads, each
// segment's progress. A sidecar file rather than an extended attribute,
// because it works on every filesystem (tmpfs, FAT, network mounts) and
// can be read by a person. A resume sends Range with If-Range; a server
// that answers 200 has either a changed file or no range support, and the
// download restarts from zero, saying which. Content-Length, Content-Range
// and, when the server sends one, Repr-Digest (RFC 9530, sha-256) are
// checked.
//
// Uploads (Put, PutTree) use tus 1.0 (core and creation; the checksum
// extension when the server offers sha256 or sha1; termination to cancel),
// or, with DiscoverIETF, the IETF resumable-upload draft at the file's own
// URL (ietf.go), which keeps the same state and the same digest check.
// The file's sha-256 is computed on another goroutine while its bytes go,
// and sent as Repr-Digest with the last bytes, in a request of their own,
// which largo checks before the upload takes its place: the file is read
// twice, but the hash no longer delays the transfer.
// With Parallel above one, a file of at least ParallelMin bytes goes to a
// server that offers tus concatenation as pieces sent over several
// connections at once, the lowest first, each a partial upload that
// announces its place, then one final upload that joins them with the
// file's digest (parallel.go).
// The upload URL the server hands out is remembered in a state file in the
// user's cache folder, keyed by the file's absolute path, size and
// modification time and by the target, so running the same upload again
// resumes it. Plain mode sends one PUT with Content-Length and a
// Repr-Digest header computed before the upload: a trailer would need
// chunked encoding, which drops Content-Length and with it the server's
// chance to refuse an oversized body before it arrives.
//
// Network errors, 5xx and 429 answers are retried with exponential backoff,
// and the count starts again whenever an attempt moved bytes: a long
// transfer over a bad link goes on as long as it makes progress. A
// transfer stopped by its context, or one that ran out of retries, returns
// an error wrapping ErrResumable: running it again resumes.
//
// The package has no terminal code; progress goes to a Progress passed in.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Progress receives the progress of one transfer. Begin is called again when
// a transfer restarts, with the bytes already there. Implementations must be
// safe for concurrent calls of Add: segmented downloads report from several
// goroutines.
type Progress interface {
	// Begin starts (or restarts) the transfer of name: total bytes (-1 when
	// unknown), of which done are already in place.
	Begin(name string, total, done int64)
	// Add reports n more bytes moved.
	Add(n int64)
	// End ends the transfer, whatever its outcome.
	End()
}

// Client downloads and uploads files. Its zero value works: one stream, no
// retries, no progress, no token. A Client is safe for concurrent use once
// configured.
type Client struct {
	// HTTP sends the requests; nil means a transport with no overall
	// timeout, no transparent compression and proxies from the environment.
	HTTP *http.Client
	// Token, when set, is sent as "Authorization: Bearer TOKEN".
	Token string
	// User and Password, when either is set, are sent as basic auth
	// (RFC 7617) instead of Token: a user's password. A URL given to the
	// client may not carry them itself: whatever a URL holds is kept in
	// state files and printed.
	User, Password string
	// LinkPassword, when set, is sent as the password of basic auth on
	// the requests to a largo share link (SharePrefix), and on no other:
	// the upload URL a drop box hands out is reached by its holder alone,
	// with no sign-in.
	LinkPassword string
	// TLS, when set, is the TLS configuration of the default transport
	// (trusted roots, InsecureSkipVerify); ignored when HTTP is set.
	TLS *tls.Config
	// Retries is how many times a failed attempt is tried again in a row;
	// 0 means none. The count restarts after an attempt that moved bytes.
	Retries int
	// Backoff is the wait before the first retry, doubled for each next one
	// up to MaxBackoff; zero means 1s.
	Backoff time.Duration
	// MaxBackoff caps the wait between retries; zero means 30s.
	MaxBackoff time.Duration
	// StallTimeout ends an attempt that moves no byte for this long, and
	// bounds the wait for response headers; zero means 60s.
	StallTimeout time.Duration
	// Segments is how many ranged requests a download runs at once; 0 or 1
	// means one stream.
	Segments int
	// ChunkSize is the size of each tus PATCH when the server checks
	// chunk checksums; zero means 64 MiB. Without the checksum extension
	// the rest of the file goes in one PATCH.
	ChunkSize int64
	// Parallel is how many pieces of one file a tus upload sends at once,
	// over as many connections, when the server offers concatenation and
	// the file has at least ParallelMin bytes (parallel.go); 0 or 1 means
	// one stream.
	Parallel int
	// ParallelMin is the smallest file sent in parallel; zero means
	// MinParallel.
	ParallelMin int64
	// PieceSize is the size of the pieces of a parallel upload; zero
	// means 16 MiB, or more for a file of more than 128 of them.
	PieceSize int64
	// Checksum makes a folder upload (PutTree) skip a file the server
	// already has only when the server's digest of it matches the local
	// file's; without, a server that keeps no digest is believed on the
	// size and date of its copy.
	Checksum bool
	// StateDir holds the upload state files; empty means
	// os.UserCacheDir()/largo/uploads.
	StateDir string
	// Progress, when set, makes the Progress of each transfer.
	Progress func() Progress
	// Logf, when set, receives notices meant for the user: a restart and
	// its reason, a retry and its wait.
	Logf func(format string, args ...any)
	// UserAgent is sent with every request; empty means "largo".
	UserAgent string

	once sync.Once
	hc   *http.Client
}

// ErrResumable marks a transfer that stopped before its end with its state
// kept: running the same transfer again resumes it.
var ErrResumable = errors.New("stopped before the end")

// ErrDigest marks content that does not match the digest the server gave.
var ErrDigest = errors.New("digest mismatch")

// StatusError is an HTTP answer that ends a transfer.
type StatusError struct {
	Code   int
	Status string // e.g. "404 Not Found"
	Reason string // the first line of the body, if short and plain
	Method string
	URL    string
	// RetryAfter is the wait the server asked for, if any.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	s := e.Method + " " + e.URL + ": " + e.Status
	if e.Reason != "" && !strings.Contains(e.Status, e.Reason) {
		s += ": " + e.Reason
	}
	return s
}

// statusError reads a short reason from resp's body and closes it.
func statusError(resp *http.Response) *StatusError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	reason := strings.TrimSpace(string(b))
	if i := strings.IndexByte(reason, '\n'); i >= 0 {
		reason = strings.TrimSpace(reason[:i])
	}
	if len(reason) > 200 || strings.HasPrefix(reason, "<") || strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 }) {
		reason = ""
	}
	return &StatusError{Code: resp.StatusCode, Status: resp.Status, Reason: reason, Method: resp.Request.Method, URL: resp.Request.URL.Redacted(), RetryAfter: retryAfter(resp.Header)}
}

// httpClient is c.HTTP or, made once, the default client.
func (c *Client) httpClient() *http.Client {
	c.once.Do(func() {
		c.hc = c.HTTP
		if c.hc != nil {
			return
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = true
		if c.TLS != nil {
			t.TLSClientConfig = c.TLS.Clone()
		}
		t.ResponseHeaderTimeout = c.stallTimeout()
		t.MaxIdleConnsPerHost = 32
		c.hc = &http.Client{Transport: t}
	})
	return c.hc
}

func (c *Client) stallTimeout() time.Duration {
	if c.StallTimeout > 0 {
		return c.StallTimeout
	}
	return 60 * time.Second
}

func (c *Client) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

func (c *Client) progress() Progress {
	if c.Progress == nil {
		return noProgress{}
	}
	if p := c.Progress(); p != nil {
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Begin(string, int64, int64) {}
func (noProgress) Add(int64)                  {}
func (noProgress) End()                       {}

// newRequest makes a request with the headers every request carries.
func (c *Client) newRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	ua := c.UserAgent
	if ua == "" {
		ua = "largo"
	}
	req.Header.Set("User-Agent", ua)
	switch {
	case c.LinkPassword != "" && strings.HasPrefix(req.URL.Path, SharePrefix):
		req.SetBasicAuth("link", c.LinkPassword)
	case c.User != "" || c.Password != "":
		req.SetBasicAuth(c.User, c.Password)
	case c.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// ErrURLCredentials refuses a URL that carries a user name or a password:
// the client keeps URLs in its state files and in its messages, where no
// secret may go. Give them as Client.User and Client.Password.
var ErrURLCredentials = errors.New("the URL holds a user name or password, which would be kept in state files and printed: give them apart")

// checkURL refuses a URL the client would keep a secret of.
func checkURL(u *url.URL) error {
	if u.User != nil {
		return ErrURLCredentials
	}
	return nil
}

// do sends req.
func (c *Client) do(req *http.Request) (*http.Response, error) { return c.httpClient().Do(req) }

// resumable wraps err, the cause of a stop, with ErrResumable.
func resumable(err error) error {
	if errors.Is(err, ErrResumable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrResumable, err)
}
