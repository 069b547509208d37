package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Result tells what a download or an upload did.
type Result struct {
	// Path is the local file.
	Path string
	// Size is the file's size.
	Size int64
	// Moved is the bytes sent or received over the network in this run.
	Moved int64
	// Resumed is true when the run went on from an earlier one.
	Resumed bool
	// UpToDate is true when there was nothing to do: the local file already
	// matches the remote one (a download), or the upload had finished.
	UpToDate bool
	// Verified names the digest the content was checked against
	// ("sha-256=:...:"), or is "" when the server sent none: the bytes
	// were then checked against the length alone.
	Verified string
	// Aside is where the bytes of a download that did not match the
	// server's digest were kept (FILE.bad), for a look; "" otherwise.
	Aside string
	// Joined is how long the server took to answer the final request of
	// a parallel upload (joining its pieces and storing the file); zero
	// for other transfers.
	Joined time.Duration
}

// Target is the local path of a download of rawURL: the last element of the
// URL's path, in the current folder, inside the folder output when output
// is one (or ends with a slash), or output itself.
func Target(rawURL, output string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if output != "" && !strings.HasSuffix(output, "/") && !strings.HasSuffix(output, string(filepath.Separator)) {
		if fi, err := os.Stat(output); err != nil || !fi.IsDir() {
			return output, nil
		}
	}
	if u.Path == "" || strings.HasSuffix(u.Path, "/") {
		return "", fmt.Errorf("the URL %s names no file: give one with -o FILE", u.Redacted())
	}
	// The last element as the URL spells it: an escaped slash in it
	// (%2F) is part of the name, not a folder.
	name, err := url.PathUnescape(path.Base(u.EscapedPath()))
	if err != nil || !safeName(name) {
		return "", fmt.Errorf("the last name of the URL %s, %q, cannot be a local file name: give one with -o FILE", u.Redacted(), name)
	}
	return filepath.Join(output, name), nil
}

// safeName reports whether name is one plain path element of this system:
// it can neither climb out of a folder nor name another one. A backslash is
// a plain character where it is not a separator.
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00") &&
		!strings.ContainsRune(name, filepath.Separator) && filepath.IsLocal(name)
}

// download is one file being fetched.
type download struct {
	c         *Client
	url       string
	path      string // the target
	part      string // path + ".part"
	listed    int64  // the size the folder listing gives, when hasListed
	hasListed bool
	prog      Progress
	res       Result
	redone    bool // started over from zero once already
}

// Get downloads rawURL into the file path, through path.part, resuming from
// the part file an earlier run left. With Segments above 1 it fetches the
// file in that many ranged requests at once. It returns an error wrapping
// ErrResumable when it stopped with the part file kept (ctx done, retries
// exhausted): calling it again resumes.
func (c *Client) Get(ctx context.Context, rawURL, path string) (Result, error) {
	return c.get(ctx, rawURL, path, -1)
}

// get is Get of a file whose size a folder listing gave as listed (-1:
// none): an answer of another size ends the download with errListedSize.
func (c *Client) get(ctx context.Context, rawURL, path string, listed int64) (Result, error) {
	if u, err := url.Parse(rawURL); err != nil || checkURL(u) != nil {
		return Result{Path: path}, cmp.Or(err, ErrURLCredentials)
	}
	d := &download{c: c, url: rawURL, path: path, part: path + ".part", listed: listed, hasListed: listed >= 0, prog: c.progress(), res: Result{Path: path}}
	defer d.prog.End()
	next := d.begin()
	for next.do != stop {
		switch next.do {
		case fetchSegments:
			next = d.segmented(ctx, next.st)
		case fetchStream:
			next = d.single(ctx, next.st, next.first)
		}
	}
	if next.err != nil {
		d.discard(next.err)
	}
	return d.res, next.err
}

// errListedSize marks a file whose size is not the one its folder listing
// gave: it changed since, or its URL names something else.
var errListedSize = errors.New("not the size the folder listing gives")

// checkListed checks a size the server gives (or the bytes received)
// against the size the folder listing gave, if any; -1 is unknown.
func (d *download) checkListed(size int64, what string) error {
	if !d.hasListed || size < 0 || size == d.listed {
		return nil
	}
	return fmt.Errorf("%s %d bytes, %w (%d): the file changed since it was listed, or its URL names something else", what, size, errListedSize, d.listed)
}

// discard cleans up after a download that ended with err: a part file of
// the wrong size goes with its state; one without a state could never be
// resumed (the next run would remove it), so it goes too.
func (d *download) discard(err error) {
	if errors.Is(err, errListedSize) {
		removePart(d.part)
		return
	}
	if _, serr := os.Stat(statePath(d.part)); errors.Is(serr, fs.ErrNotExist) {
		os.Remove(d.part)
	}
}

// action is what a download does next.
type action int

const (
	stop          action = iota // the download is over: done, or failed with the step's err
	fetchSegments               // fetch in ranged requests at once (segmented)
	fetchStream                 // fetch in one stream (single)
)

// step is a download's next action and what it starts from.
type step struct {
	do    action
	st    *partState     // the state to resume from; nil: from zero
	first *http.Response // fetchStream: an answer for the whole file, already received
	err   error          // stop: why; nil when the download is done
}

// stopped is the step that ends a download with err (nil: done).
func stopped(err error) step { return step{do: stop, err: err} }

// begin takes up what an earlier run left, when it is for the same URL and
// still fits, and returns the first step.
func (d *download) begin() step {
	st, err := loadState(d.part)
	if err != nil {
		d.c.logf("%s: ignoring the resume state (%v); starting from zero", d.path, err)
	}
	if st != nil && st.URL != d.url {
		d.c.logf("%s: the part file came from %s; starting from zero", d.path, st.URL)
		st = nil
	}
	if st != nil && d.hasListed && st.Size >= 0 && st.Size != d.listed {
		d.c.logf("%s: the part file is of another version of the file (%d bytes, the listing gives %d); starting from zero", d.path, st.Size, d.listed)
		st = nil
	}
	if st != nil {
		fi, err := os.Stat(d.part)
		if err != nil {
			st = nil
		} else if st.Segments == nil && st.Size >= 0 && fi.Size() > st.Size {
			d.c.logf("%s: the part file is longer than the remote file; starting from zero", d.path)
			st = nil
		}
	}
	if st == nil {
		removePart(d.part)
	} else {
		d.res.Resumed = true
		if st.ifRange() == "" {
			d.c.logf("%s: the server gives no ETag or Last-Modified: resuming without checking that the file is unchanged", d.path)
		}
	}
	if d.c.Segments > 1 || st != nil && st.Segments != nil {
		return step{do: fetchSegments, st: st}
	}
	return step{do: fetchStream, st: st}
}

// fromZero is the step after err made a download throw its part file
// away: do again from zero, once in a run (logged, ending with how); a
// second time, err ends the download.
func (d *download) fromZero(err error, do action, how string) step {
	if d.redone {
		return stopped(err)
	}
	d.redone = true
	d.res.Resumed = false
	d.c.logf("%s: %v; %s", d.path, err, how)
	return step{do: do}
}

// request sends a GET for the bytes from off on, validated by st.
func (d *download) request(ctx context.Context, st *partState, rangeHdr string) (*http.Response, error) {
	req, err := d.c.newRequest(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Want-Repr-Digest", "sha-256=10, sha-512=3")
	if rangeHdr != "" {
		req.Header.Set("Range", rangeHdr)
		if st != nil && st.ifRange() != "" {
			req.Header.Set("If-Range", st.ifRange())
		}
	}
	return d.c.do(req)
}

// upToDate reports whether the target already holds the remote file: the
// same size, and a modification time equal to the server's Last-Modified.
func (d *download) upToDate(size int64, lastModified string) bool {
	fi, err := os.Stat(d.path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size || lastModified == "" {
		return false
	}
	t, err := http.ParseTime(lastModified)
	return err == nil && fi.ModTime().Truncate(time.Second).Equal(t)
}

// stream is a download in one request at a time, appended to the part file.
type stream struct {
	d      *download
	f      *os.File
	st     *partState // nil until the first answer
	off    int64      // bytes in the part file
	h      hash.Hash  // hashes [0, off) when the server declared a digest
	begun  bool       // progress has begun since the last restart
	starts int        // restarts from zero
}

// outcome is how an attempt at a stream or at a segment ended, and so
// what comes next.
type outcome int

const (
	failed    outcome = iota // with an error: try again after a pause, if the error allows
	receive                  // the answer's head is good: receive its body
	complete                 // the part file (or the segment) holds all its bytes
	current                  // the target already holds the remote file: nothing to do
	restarted                // the part file was emptied: try again at once
	startOver                // the remote file changed, or ranges stopped working: the whole download starts from zero
)

// maxRestarts bounds the restarts from zero of one run: a server that
// answers every range wrongly must not keep a download going for ever.
const maxRestarts = 3

// single is the step that runs a one-stream download; first, when set, is
// an answer already received for the whole file.
func (d *download) single(ctx context.Context, st *partState, first *http.Response) step {
	f, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if first != nil {
			first.Body.Close()
		}
		return stopped(localError{err})
	}
	defer f.Close()
	s := &stream{d: d, f: f, st: st}
	if st != nil {
		fi, err := f.Stat()
		if err != nil {
			return stopped(localError{err})
		}
		s.off = fi.Size()
	}
	out, err := s.fetch(ctx, first)
	switch {
	case out == current:
		return stopped(nil)
	case err != nil:
		return stopped(err)
	}
	return s.verify()
}

// fetch makes attempts until the part file holds the whole file
// (complete), the target turns out to be up to date (current), or an
// error ends the download (failed).
func (s *stream) fetch(ctx context.Context, first *http.Response) (outcome, error) {
	r := s.d.c.retrier()
	for {
		before := s.off
		out, err := s.attempt(ctx, first)
		first = nil
		switch out {
		case complete, current:
			return out, nil
		case restarted:
			if s.starts++; s.starts <= maxRestarts {
				continue
			}
			err = errors.New("the server keeps answering ranges wrongly")
		}
		if s.off > before {
			r.progressed()
		}
		if err = r.again(ctx, err); err != nil {
			return failed, err
		}
	}
}

// verify checks that the part file is whole and matches the server's
// digest, if it sent one, and makes it the target.
func (s *stream) verify() step {
	if s.st.Size >= 0 && s.off != s.st.Size {
		return stopped(fmt.Errorf("received %d bytes of %d", s.off, s.st.Size))
	}
	if err := s.d.checkListed(s.off, "received"); err != nil {
		return stopped(err)
	}
	if s.st.Digest != "" {
		if s.h == nil {
			h, err := hashFile(s.d.part, s.off, s.st.Digest)
			if err != nil {
				return stopped(err)
			}
			s.h = h
		}
		if err := checkDigest(s.st.Digest, s.h.Sum(nil)); err != nil {
			return s.d.mismatch(err)
		}
		s.d.res.Verified = s.st.Digest
	}
	return stopped(s.d.finish(s.f, s.st, s.off))
}

// mismatch is the step after content did not match the server's digest:
// a resumed download is fetched again from zero, once (its part may hold
// bytes of another version); otherwise the error ends it, and the bytes
// received are kept aside as FILE.bad, never at FILE.
func (d *download) mismatch(err error) step {
	if !d.res.Resumed {
		os.Remove(statePath(d.part))
		bad := d.path + ".bad"
		if rerr := os.Rename(d.part, bad); rerr != nil {
			os.Remove(d.part)
			return stopped(fmt.Errorf("%w (the bytes received could not be kept aside: %v)", err, rerr))
		}
		d.res.Aside = bad
		return stopped(fmt.Errorf("%w; the bytes received are kept aside as %s", err, bad))
	}
	removePart(d.part)
	do := fetchStream
	if d.c.Segments > 1 {
		do = fetchSegments
	}
	return d.fromZero(err, do, "downloading again from zero")
}

// attempt makes one request (or takes first) and appends its body to the
// part file.
func (s *stream) attempt(ctx context.Context, first *http.Response) (outcome, error) {
	if s.st != nil && s.st.Size >= 0 && s.off == s.st.Size {
		return complete, nil
	}
	actx, wd := s.d.c.watch(ctx)
	defer wd.stop()
	resp := first
	if resp == nil {
		rangeHdr := ""
		if s.off > 0 {
			rangeHdr = "bytes=" + strconv.FormatInt(s.off, 10) + "-"
		}
		var err error
		if resp, err = s.d.request(actx, s.st, rangeHdr); err != nil {
			return failed, cause(actx, err)
		}
	}
	defer resp.Body.Close()
	out, err := s.answer(resp)
	if out != receive {
		return out, err
	}
	return s.receive(actx, wd, resp)
}

// answer reads an answer's status and headers, and tells whether to
// receive its body.
func (s *stream) answer(resp *http.Response) (outcome, error) {
	switch resp.StatusCode {
	case http.StatusPartialContent:
		return s.partial(resp)
	case http.StatusOK:
		return s.whole(resp)
	case http.StatusRequestedRangeNotSatisfiable:
		return s.unsatisfiable(resp)
	}
	return failed, statusError(resp)
}

// partial takes a 206: the rest of the part file, or the whole file as a
// 206; any other range throws the part file away.
func (s *stream) partial(resp *http.Response) (outcome, error) {
	start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err == nil {
		if err := s.d.checkListed(total, "the server sends"); err != nil {
			return failed, err
		}
	}
	switch {
	case err == nil && s.st == nil && start == 0 && end+1 == total:
		// The whole file as a 206: take it as a 200.
		s.st = stateFor(s.d.url, resp, total)
		if err := saveState(s.d.part, s.st); err != nil {
			return failed, err
		}
	case err != nil || s.st == nil || start != s.off || end+1 != total || s.st.Size >= 0 && total != s.st.Size:
		s.d.c.logf("%s: the server answered the range with %q; starting from zero", s.d.path, resp.Header.Get("Content-Range"))
		return s.restart()
	default:
		s.st.Size = total
	}
	return receive, nil
}

// whole takes a 200: the whole file, which replaces the part file, unless
// the target already holds it.
func (s *stream) whole(resp *http.Response) (outcome, error) {
	if s.off > 0 {
		if s.st.changed(resp) {
			s.d.c.logf("%s: the remote file changed since the part file was written; starting from zero", s.d.path)
		} else {
			s.d.c.logf("%s: the server ignored the range request; starting from zero", s.d.path)
		}
		if err := s.reset(); err != nil {
			return failed, err
		}
	}
	if s.st == nil && s.d.upToDate(resp.ContentLength, resp.Header.Get("Last-Modified")) {
		s.d.res.UpToDate, s.d.res.Size = true, resp.ContentLength
		removePart(s.d.part)
		return current, nil
	}
	if err := s.d.checkListed(resp.ContentLength, "the server sends"); err != nil {
		return failed, err
	}
	s.st = stateFor(s.d.url, resp, resp.ContentLength)
	if err := saveState(s.d.part, s.st); err != nil {
		return failed, err
	}
	return receive, nil
}

// unsatisfiable takes a 416: the end of a file of unknown size when the
// part file holds exactly its bytes; otherwise the remote file is shorter
// than the part file, which is thrown away.
func (s *stream) unsatisfiable(resp *http.Response) (outcome, error) {
	if s.st != nil && s.st.Size < 0 {
		if _, _, total, err := parseContentRange(resp.Header.Get("Content-Range")); err == nil && total == s.off {
			s.st.Size = total
			return complete, nil
		}
	}
	s.d.c.logf("%s: the remote file is shorter than the part file; starting from zero", s.d.path)
	return s.restart()
}

// receive appends an answer's body to the part file.
func (s *stream) receive(actx context.Context, wd *watchdog, resp *http.Response) (outcome, error) {
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return failed, fmt.Errorf("the server sent the file %s-encoded although asked for it as is", ce)
	}
	if s.st.Digest != "" && s.h == nil {
		h, err := hashFile(s.d.part, s.off, s.st.Digest)
		if err != nil {
			return failed, err
		}
		s.h = h
	}
	if !s.begun {
		s.d.prog.Begin(filepath.Base(s.d.path), s.st.Size, s.off)
		s.begun = true
	}
	if _, err := s.f.Seek(s.off, io.SeekStart); err != nil {
		return failed, localError{err}
	}
	sink := &partWriter{w: s.f, h: s.h, count: func(n int64) { s.off += n }}
	moved, err := io.CopyBuffer(sink, &touchReader{r: resp.Body, w: wd, prog: s.d.prog}, make([]byte, copyBuf))
	s.d.res.Moved += moved
	if err != nil {
		return failed, cause(actx, err)
	}
	if s.st.Size >= 0 && s.off != s.st.Size {
		return failed, transient("the answer ended after %d bytes, at %d of %d", moved, s.off, s.st.Size)
	}
	if s.st.Size < 0 {
		s.st.Size = s.off
	}
	return complete, nil
}

// reset empties the part file and forgets the state.
func (s *stream) reset() error {
	s.st, s.off, s.h, s.begun = nil, 0, nil, false
	s.d.res.Resumed = false
	if err := s.f.Truncate(0); err != nil {
		return localError{err}
	}
	os.Remove(statePath(s.d.part))
	return nil
}

// restart resets the stream for a new attempt at once.
func (s *stream) restart() (outcome, error) {
	if err := s.reset(); err != nil {
		return failed, err
	}
	return restarted, nil
}

// copyBuf is the size of the buffer bodies are copied through.
const copyBuf = 256 << 10

// partWriter writes to the part file, hashes what it wrote when h is set,
// and counts it. It has no ReadFrom, so that io.CopyBuffer uses the buffer
// it is given.
type partWriter struct {
	w     io.Writer
	h     hash.Hash
	count func(int64)
}

func (p *partWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if p.h != nil {
		p.h.Write(b[:n])
	}
	p.count(int64(n))
	if err != nil {
		return n, localError{err}
	}
	return n, nil
}

// finish makes the part file the target: synced, renamed over the target,
// its modification time the server's Last-Modified, the state removed.
func (d *download) finish(f *os.File, st *partState, size int64) error {
	d.res.Size = size
	if err := f.Sync(); err != nil {
		return localError{err}
	}
	if err := f.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
		return localError{err}
	}
	if err := os.Rename(d.part, d.path); err != nil {
		return localError{err}
	}
	os.Remove(statePath(d.part))
	if t, err := http.ParseTime(st.LastModified); err == nil {
		os.Chtimes(d.path, t, t)
	}
	syncDir(filepath.Dir(d.path))
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// parseContentRange reads "bytes START-END/TOTAL"; total is -1 for "*".
func parseContentRange(v string) (start, end, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", v)
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
			return 0, 0, 0, bad
		}
	}
	if rng == "*" {
		return -1, -1, total, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start || total >= 0 && end >= total {
		return 0, 0, 0, bad
	}
	return start, end, total, nil
}
