package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A parallel upload sends one file over several connections with tus
// concatenation: the file is cut into pieces, each a partial upload
// (Upload-Concat: partial) that announces its place (the concat-id,
// concat-offset and concat-length metadata, which a largo server uses to
// write it where it belongs), and Client.Parallel workers send them, each
// taking the lowest piece not yet taken. Sent in that order, the pieces
// fill the file from its start, and a largo server hashes the file as it
// fills in: when the last byte arrives, only the few pieces still in
// flight are left to hash. Then one final upload (Upload-Concat: final)
// lists the pieces in order, with the file's digest as Repr-Digest. Other
// tus servers with concatenation join the pieces in the order listed and
// ignore the metadata.
//
// Every piece's URL is kept in the upload's state file as soon as it is
// known, and whether it is complete: a run stopped anywhere (by a signal,
// a cut connection, a killed process) goes on with the complete pieces
// as they are, resumes each piece begun from the offset its server
// reports, and sends the rest. Memory stays flat: each worker streams its
// piece from the file.

// MinParallel is the smallest file a Client with Parallel above one
// sends in parallel, when ParallelMin is zero: below it, one stream.
const MinParallel = 64 << 20

// Piece sizes: at least minPiece, and no more pieces than maxPieces, so
// that the final request's list of them stays well below a server's limit
// on the size of its header (largo's is 64 KiB; an upload URL of a bucket
// can be a few hundred bytes).
const (
	minPiece  = 16 << 20
	maxPieces = 128
)

// pieceSize returns the size of the pieces a file of size bytes is cut
// into: whole MiB, at least the minimum.
func pieceSize(size, least int64) int64 {
	p := max(least, (size+maxPieces-1)/maxPieces)
	return (p + 1<<20 - 1) &^ (1<<20 - 1)
}

// pieceState is what the state file keeps of one piece.
type pieceState struct {
	URL  string `json:"url,omitempty"`
	Done bool   `json:"done,omitempty"`
}

// parallel reports whether an upload of size bytes to d goes in parallel.
func (c *Client) parallel(d *Destination, size int64) bool {
	least := c.ParallelMin
	if least <= 0 {
		least = MinParallel
	}
	return c.Parallel > 1 && d.concat && size >= least
}

// putPieces uploads file in pieces, c.Parallel at once, and joins them
// with a final upload. up is the remembered upload, or nil.
func (c *Client) putPieces(ctx context.Context, file, abs string, fi os.FileInfo, d *Destination, up *upload, key, folder, name string, prog Progress) (Result, error) {
	res := Result{Path: file, Size: fi.Size()}
	f, err := os.Open(file)
	if err != nil {
		return res, localError{err}
	}
	defer f.Close()
	hctx, stopHash := context.WithCancel(ctx)
	defer stopHash()
	sum := hashAsync(hctx, file)
	started := false
	for {
		if up == nil {
			up = c.newPieces(abs, fi, d, folder, name)
			if err := c.saveUpload(key, up); err != nil {
				return res, err
			}
			started = true
		}
		p := &pieceRun{c: c, f: f, up: up, key: key, folder: folder, name: name, endpoint: d.Endpoint, prog: prog}
		res.Resumed = !started && p.begun()
		prog.Begin(name, fi.Size(), p.doneBytes())
		err := p.run(ctx)
		res.Moved += p.moved()
		if err == nil {
			var fin finalResult
			fin, err = c.finalOnce(ctx, d, up, folder, name, sum)
			if err == nil {
				c.forgetUpload(key)
				res.Verified, res.Joined = fin.verified, fin.took
				if !started && res.Moved == 0 && !res.Resumed {
					res.UpToDate = true
				}
				return res, nil
			}
		}
		if errors.Is(err, errGone) && ctx.Err() == nil && !started {
			c.logf("%s: %v; starting a new upload", file, err)
			c.forgetUpload(key)
			up, res.Resumed = nil, false
			continue
		}
		return res, err
	}
}

// newPieces is the state of a new parallel upload of the file at abs.
func (c *Client) newPieces(abs string, fi os.FileInfo, d *Destination, folder, name string) *upload {
	var id [16]byte
	rand.Read(id[:])
	each := pieceSize(fi.Size(), minPiece)
	if c.PieceSize > 0 {
		each = c.PieceSize
	}
	n := (fi.Size() + each - 1) / each
	return &upload{
		File: abs, Size: fi.Size(), ModTime: fi.ModTime(), Endpoint: d.Endpoint, Target: folder + "/" + name,
		ConcatID: hex.EncodeToString(id[:]), PieceSize: each, Pieces: make([]pieceState, n),
	}
}

// pieceRun sends the pieces of one parallel upload.
type pieceRun struct {
	c        *Client
	f        *os.File
	up       *upload
	key      string
	folder   string
	name     string
	endpoint string
	prog     Progress

	// made[i] is closed once piece i's creation ahead of its sending
	// ended (makeAhead), whether or not it made the piece.
	made []chan struct{}
	// fresh[i] is set when makeAhead made piece i in this run: it holds
	// nothing yet. Read after made[i] is closed.
	fresh []bool

	mu     sync.Mutex
	next   int   // the lowest piece not yet taken
	sent   int64 // bytes sent in this run
	failed error // the first error that ends the run
}

// begun reports whether an earlier run sent anything.
func (p *pieceRun) begun() bool {
	for _, ps := range p.up.Pieces {
		if ps.URL != "" {
			return true
		}
	}
	return false
}

// doneBytes is the bytes of the pieces complete already.
func (p *pieceRun) doneBytes() int64 {
	var n int64
	for i, ps := range p.up.Pieces {
		if ps.Done {
			n += p.span(i)
		}
	}
	return n
}

func (p *pieceRun) moved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// span is the length of piece i.
func (p *pieceRun) span(i int) int64 {
	at := int64(i) * p.up.PieceSize
	return min(p.up.PieceSize, p.up.Size-at)
}

// run sends every piece not complete, c.Parallel at once, and returns
// once all are complete, or with the first error that stops a worker
// for good (the others finish the piece they send).
func (p *pieceRun) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	p.made, p.fresh = make([]chan struct{}, len(p.up.Pieces)), make([]bool, len(p.up.Pieces))
	for i := range p.made {
		p.made[i] = make(chan struct{})
	}
	wg.Go(func() { p.makeAhead(ctx) })
	for range min(max(p.c.Parallel, 1), len(p.up.Pieces)) {
		wg.Go(func() {
			for {
				i, ok := p.take()
				if !ok {
					return
				}
				if err := p.send(ctx, i); err != nil {
					p.fail(err)
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed != nil {
		return p.failed
	}
	if ctx.Err() != nil {
		return resumable(context.Cause(ctx))
	}
	return nil
}

// makeAhead creates, in order and aheadCreations at once, the pieces
// that have no partial upload yet, so that a worker finds its next piece
// made and only sends its bytes: over a long path a creation is a round
// trip, which a worker would otherwise wait for before each piece. A
// piece whose creation fails here is made by its worker. Each URL is
// kept in the state file as soon as it is known, so that a run stopped
// at any point resumes every piece from the server's offset.
func (p *pieceRun) makeAhead(ctx context.Context) {
	sem := make(chan struct{}, aheadCreations)
	var wg sync.WaitGroup
	for i := range p.up.Pieces {
		if p.piece(i).URL != "" || p.piece(i).Done {
			close(p.made[i])
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			close(p.made[i])
			continue
		}
		wg.Go(func() {
			defer func() { <-sem; close(p.made[i]) }()
			at := int64(i) * p.up.PieceSize
			if u, err := p.create(ctx, at, p.span(i)); err == nil && p.set(i, pieceState{URL: u}) == nil {
				p.fresh[i] = true
			}
		})
	}
	wg.Wait()
}

// aheadCreations is how many pieces makeAhead creates at once.
const aheadCreations = 4

// take returns the lowest piece that is neither complete nor taken.
func (p *pieceRun) take() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.next < len(p.up.Pieces) && p.up.Pieces[p.next].Done {
		p.next++
	}
	if p.failed != nil || p.next >= len(p.up.Pieces) {
		return 0, false
	}
	p.next++
	return p.next - 1, true
}

// fail keeps the first error that ends the run: a stop by the context
// weighs less than the failure that caused it.
func (p *pieceRun) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil || errors.Is(p.failed, context.Canceled) && !errors.Is(err, context.Canceled) {
		p.failed = err
	}
}

// set records piece i's state and saves the upload's.
func (p *pieceRun) set(i int, ps pieceState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up.Pieces[i] = ps
	return p.c.saveUpload(p.key, p.up)
}

func (p *pieceRun) piece(i int) pieceState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up.Pieces[i]
}

// send makes piece i complete on the server: created if it has no URL,
// resumed from the server's offset if it has one, retried while attempts
// make progress.
func (p *pieceRun) send(ctx context.Context, i int) error {
	at, size := int64(i)*p.up.PieceSize, p.span(i)
	r := p.c.retrier()
	off := int64(-1) // unknown: ask the server
	select {
	case <-p.made[i]:
	case <-ctx.Done():
		return resumable(context.Cause(ctx))
	}
	if p.fresh[i] {
		off = 0 // made ahead: nothing sent yet
	}
	for {
		ps := p.piece(i)
		var err error
		if ps.URL == "" {
			ps.URL, err = p.create(ctx, at, size)
			if err == nil {
				err = p.set(i, ps)
				off = 0
			}
		} else if off < 0 {
			off, err = p.c.tusOffset(ctx, &upload{URL: ps.URL, Size: size})
		}
		if err == nil && off == size {
			return p.set(i, pieceState{URL: ps.URL, Done: true})
		}
		if err == nil {
			var n int64
			before := off
			off, n, err = p.patch(ctx, ps.URL, at, off, size)
			p.mu.Lock()
			p.sent += n
			p.mu.Unlock()
			if off > before {
				r.progressed()
			}
			if err == nil {
				continue
			}
		}
		if errors.Is(err, errGone) && ctx.Err() == nil {
			// Expired or removed: this piece starts again.
			if err := p.set(i, pieceState{}); err != nil {
				return err
			}
			off = -1
			continue
		}
		off = -1
		if err = r.again(ctx, err); err != nil {
			return err
		}
	}
}

// create makes the partial upload of the size bytes at at.
func (p *pieceRun) create(ctx context.Context, at, size int64) (string, error) {
	actx, wd := p.c.watch(ctx)
	defer wd.stop()
	req, err := p.c.newRequest(actx, http.MethodPost, p.endpoint, http.NoBody)
	if err != nil {
		return "", err
	}
	req.Header.Set("Tus-Resumable", tusVersion)
	req.Header.Set("Upload-Concat", "partial")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", tusMetadata("filename", p.name, "folder", p.folder,
		"concat-id", p.up.ConcatID, "concat-offset", strconv.FormatInt(at, 10), "concat-length", strconv.FormatInt(p.up.Size, 10)))
	resp, err := p.c.do(req)
	if err != nil {
		return "", cause(actx, err)
	}
	return createdAt(resp, "a partial upload")
}

// patch sends the rest of a piece, from off, in one request, and returns
// the server's new offset and the bytes sent.
func (p *pieceRun) patch(ctx context.Context, u string, at, off, size int64) (int64, int64, error) {
	actx, wd := p.c.watch(ctx)
	defer wd.stop()
	body := &countReader{r: &touchReader{r: io.NewSectionReader(p.f, at+off, size-off), w: wd, prog: p.prog}}
	req, err := p.c.newRequest(actx, http.MethodPatch, u, body)
	if err != nil {
		return off, 0, err
	}
	req.ContentLength = size - off
	req.Header.Set("Tus-Resumable", tusVersion)
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	// No Expect: 100-continue: waiting for it costs a round trip per
	// piece; a refusal is rare (the piece gone, another request on it),
	// and the server answers it at once and closes the connection.
	resp, err := p.c.do(req)
	if err != nil {
		return off, body.sent(), cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
	case http.StatusNotFound, http.StatusGone:
		return off, body.sent(), errGone
	case http.StatusConflict:
		return off, body.sent(), transient("the server's offset is not %d", off)
	case http.StatusLocked:
		return off, body.sent(), transient("the partial upload is locked by an earlier request")
	default:
		return off, body.sent(), statusError(resp)
	}
	next, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if err != nil || next < off || next > size {
		return off, body.sent(), transient("the server answered with the offset %q", resp.Header.Get("Upload-Offset"))
	}
	return next, body.sent(), nil
}

// finalResult is what the final upload's answer confirmed.
type finalResult struct {
	verified string        // the digest the server answered, equal to the file's
	took     time.Duration // from the request to its answer
}

// finalOnce creates the final upload of up's pieces, retrying while the
// network fails, with the file's digest as Repr-Digest. A piece the
// server no longer has is errGone: the upload starts again.
func (c *Client) finalOnce(ctx context.Context, d *Destination, up *upload, folder, name string, fd *fileDigest) (finalResult, error) {
	repr, err := fd.wait(ctx)
	if err != nil {
		return finalResult{}, err
	}
	paths := make([]string, len(up.Pieces))
	for i, ps := range up.Pieces {
		u, err := url.Parse(ps.URL)
		if err != nil {
			return finalResult{}, fmt.Errorf("a partial upload's URL %q: %w", ps.URL, err)
		}
		paths[i] = u.EscapedPath()
	}
	r := c.retrier()
	for {
		res, err := c.final(ctx, d, strings.Join(paths, " "), folder, name, repr)
		if err == nil {
			return res, nil
		}
		if err = r.again(ctx, err); err != nil {
			return res, err
		}
	}
}

func (c *Client) final(ctx context.Context, d *Destination, list, folder, name, repr string) (finalResult, error) {
	// Joining and placing take the server a moment: no byte moves.
	actx, wd := c.watch(ctx)
	defer wd.stop()
	req, err := c.newRequest(actx, http.MethodPost, d.Endpoint, http.NoBody)
	if err != nil {
		return finalResult{}, err
	}
	req.Header.Set("Tus-Resumable", tusVersion)
	req.Header.Set("Upload-Concat", "final;"+list)
	req.Header.Set("Upload-Metadata", tusMetadata("filename", name, "folder", folder))
	req.Header.Set("Repr-Digest", repr)
	start := time.Now()
	resp, err := c.do(req)
	if err != nil {
		return finalResult{}, cause(actx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusOK, http.StatusNoContent:
	case http.StatusNotFound, http.StatusGone:
		return finalResult{}, fmt.Errorf("%w (a partial upload is gone)", errGone)
	default:
		return finalResult{}, statusError(resp)
	}
	res := finalResult{took: time.Since(start)}
	got, ok := parseDigest(resp.Header.Get("Repr-Digest"))
	if !ok || got.alg != "sha-256" {
		return res, nil // a server that tells no digest
	}
	if got.String() != repr {
		return res, fmt.Errorf("%w: the server stored %s, the file is %s", ErrDigest, got, repr)
	}
	res.verified = repr
	return res, nil
}
