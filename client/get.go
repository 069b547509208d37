package client

import (
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
	// Verified names the digest the content was checked against, if any.
	Verified string
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
	name := path.Base(u.Path)
	if strings.HasSuffix(u.Path, "/") || !safeName(name) {
		return "", fmt.Errorf("the URL %s names no file: give one with -o FILE", rawURL)
	}
	return filepath.Join(output, name), nil
}

// safeName reports whether name is one plain path element: it can neither
// climb out of a folder nor name a hidden file of its own.
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") &&
		filepath.IsLocal(name)
}

// download is one file being fetched.
type download struct {
	c      *Client
	url    string
	path   string // the target
	part   string // path + ".part"
	prog   Progress
	res    Result
	redone bool // restarted from zero once after a digest mismatch
}

// Get downloads rawURL into the file path, through path.part, resuming from
// the part file an earlier run left. With Segments above 1 it fetches the
// file in that many ranged requests at once. It returns an error wrapping
// ErrResumable when it stopped with the part file kept (ctx done, retries
// exhausted): calling it again resumes.
func (c *Client) Get(ctx context.Context, rawURL, path string) (Result, error) {
	d := &download{c: c, url: rawURL, path: path, part: path + ".part", prog: c.progress(), res: Result{Path: path}}
	defer d.prog.End()
	st, err := loadState(d.part)
	if err != nil {
		c.logf("%s: ignoring the resume state (%v); starting from zero", path, err)
	}
	if st != nil && st.URL != rawURL {
		c.logf("%s: the part file came from %s; starting from zero", path, st.URL)
		st = nil
	}
	if st != nil {
		fi, err := os.Stat(d.part)
		if err != nil {
			st = nil
		} else if st.Segments == nil && st.Size >= 0 && fi.Size() > st.Size {
			c.logf("%s: the part file is longer than the remote file; starting from zero", path)
			st = nil
		}
	}
	if st == nil {
		removePart(d.part)
	} else {
		d.res.Resumed = true
		if st.ifRange() == "" {
			c.logf("%s: the server gives no ETag or Last-Modified: resuming without checking that the file is unchanged", path)
		}
	}
	if c.Segments > 1 || st != nil && st.Segments != nil {
		return d.segmented(ctx, st)
	}
	return d.single(ctx, st, nil)
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

// single runs a one-stream download; first, when set, is an answer already
// received for the whole file.
func (d *download) single(ctx context.Context, st *partState, first *http.Response) (Result, error) {
	f, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if first != nil {
			first.Body.Close()
		}
		return d.res, localError{err}
	}
	defer f.Close()
	s := &stream{d: d, f: f, st: st}
	if st != nil {
		fi, err := f.Stat()
		if err != nil {
			return d.res, localError{err}
		}
		s.off = fi.Size()
	}
	r := d.c.retrier()
	for {
		before := s.off
		done, err := s.attempt(ctx, first)
		first = nil
		if err == nil && done {
			break
		}
		if errors.Is(err, errUpToDate) {
			return d.res, nil
		}
		if errors.Is(err, errRestart) {
			if s.starts++; s.starts <= maxRestarts {
				continue
			}
			err = errors.New("the server keeps answering ranges wrongly")
		}
		if s.off > before {
			r.progressed()
		}
		if err == nil {
			continue
		}
		if err = r.again(ctx, err); err != nil {
			return d.res, err
		}
	}
	if s.st.Size >= 0 && s.off != s.st.Size {
		return d.res, fmt.Errorf("received %d bytes of %d", s.off, s.st.Size)
	}
	if s.st.Digest != "" {
		if s.h == nil {
			if s.h, err = hashFile(d.part, s.off, s.st.Digest); err != nil {
				return d.res, err
			}
		}
		if err := checkDigest(s.st.Digest, s.h.Sum(nil)); err != nil {
			return d.mismatch(ctx, err)
		}
		d.res.Verified = s.st.Digest
	}
	return d.finish(f, s.st, s.off)
}

// mismatch handles content that does not match the server's digest: a
// resumed download is fetched again from zero, once; otherwise the part
// file is removed and the error returned.
func (d *download) mismatch(ctx context.Context, err error) (Result, error) {
	removePart(d.part)
	if !d.res.Resumed || d.redone {
		return d.res, err
	}
	d.redone = true
	d.res.Resumed = false
	d.c.logf("%s: %v; downloading again from zero", d.path, err)
	if d.c.Segments > 1 {
		return d.segmented(ctx, nil)
	}
	return d.single(ctx, nil, nil)
}

// attempt makes one request (or takes first) and appends its body to the
// part file. done is true when the file is complete.
func (s *stream) attempt(ctx context.Context, first *http.Response) (done bool, err error) {
	if s.st != nil && s.st.Size >= 0 && s.off == s.st.Size {
		return true, nil
	}
	actx, wd := s.d.c.watch(ctx)
	defer wd.stop()
	resp := first
	if resp == nil {
		rangeHdr := ""
		if s.off > 0 {
			rangeHdr = "bytes=" + strconv.FormatInt(s.off, 10) + "-"
		}
		if resp, err = s.d.request(actx, s.st, rangeHdr); err != nil {
			return false, cause(actx, err)
		}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		switch {
		case err == nil && s.st == nil && start == 0 && end+1 == total:
			// The whole file as a 206: take it as a 200.
			s.st = stateFor(s.d.url, resp, total)
			if err := saveState(s.d.part, s.st); err != nil {
				return false, err
			}
		case err != nil || s.st == nil || start != s.off || end+1 != total || s.st.Size >= 0 && total != s.st.Size:
			s.d.c.logf("%s: the server answered the range with %q; starting from zero", s.d.path, resp.Header.Get("Content-Range"))
			return false, s.restart()
		default:
			s.st.Size = total
		}
	case http.StatusOK:
		if s.off > 0 {
			if s.st.changed(resp) {
				s.d.c.logf("%s: the remote file changed since the part file was written; starting from zero", s.d.path)
			} else {
				s.d.c.logf("%s: the server ignored the range request; starting from zero", s.d.path)
			}
			if err := s.reset(); err != nil {
				return false, err
			}
		}
		if s.st == nil && s.d.upToDate(resp.ContentLength, resp.Header.Get("Last-Modified")) {
			s.d.res.UpToDate, s.d.res.Size = true, resp.ContentLength
			removePart(s.d.part)
			return false, errUpToDate
		}
		s.st = stateFor(s.d.url, resp, resp.ContentLength)
		if err := saveState(s.d.part, s.st); err != nil {
			return false, err
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if s.st != nil && s.st.Size < 0 {
			if _, _, total, err := parseContentRange(resp.Header.Get("Content-Range")); err == nil && total == s.off {
				s.st.Size = total
				return true, nil
			}
		}
		s.d.c.logf("%s: the remote file is shorter than the part file; starting from zero", s.d.path)
		return false, s.restart()
	default:
		return false, statusError(resp)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return false, fmt.Errorf("the server sent the file %s-encoded although asked for it as is", ce)
	}
	if s.st.Digest != "" && s.h == nil {
		if s.h, err = hashFile(s.d.part, s.off, s.st.Digest); err != nil {
			return false, err
		}
	}
	if !s.begun {
		s.d.prog.Begin(filepath.Base(s.d.path), s.st.Size, s.off)
		s.begun = true
	}
	if _, err := s.f.Seek(s.off, io.SeekStart); err != nil {
		return false, localError{err}
	}
	sink := &partWriter{w: s.f, h: s.h, count: func(n int64) { s.off += n }}
	moved, err := io.CopyBuffer(sink, &touchReader{r: resp.Body, w: wd, prog: s.d.prog}, make([]byte, copyBuf))
	s.d.res.Moved += moved
	if err != nil {
		return false, cause(actx, err)
	}
	if s.st.Size >= 0 && s.off != s.st.Size {
		return false, transient("the answer ended after %d bytes, at %d of %d", moved, s.off, s.st.Size)
	}
	if s.st.Size < 0 {
		s.st.Size = s.off
	}
	return true, nil
}

// errUpToDate ends a download that has nothing to do; errRestart ends an
// attempt that threw the part file away, for a new one at once.
var (
	errUpToDate = errors.New("up to date")
	errRestart  = errors.New("restart from zero")
)

// maxRestarts bounds the restarts from zero of one run: a server that
// answers every range wrongly must not keep a download going for ever.
const maxRestarts = 3

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

// restart resets the stream and ends the attempt for a new one.
func (s *stream) restart() error {
	if err := s.reset(); err != nil {
		return err
	}
	return errRestart
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
func (d *download) finish(f *os.File, st *partState, size int64) (Result, error) {
	d.res.Size = size
	if err := f.Sync(); err != nil {
		return d.res, localError{err}
	}
	if err := f.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
		return d.res, localError{err}
	}
	if err := os.Rename(d.part, d.path); err != nil {
		return d.res, localError{err}
	}
	os.Remove(statePath(d.part))
	if t, err := http.ParseTime(st.LastModified); err == nil {
		os.Chtimes(d.path, t, t)
	}
	syncDir(filepath.Dir(d.path))
	return d.res, nil
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
