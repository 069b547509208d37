package s3

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"largo"
)

// put stores size bytes of body at the upload's key under cond, in one
// PUT; opts are the request's options (Store.streamed, for a pipe).
func (u *upload) put(ctx context.Context, body io.Reader, size int64, cond largo.Condition, opts ...func(*awss3.Options)) (written, error) {
	c, err := u.conditions(ctx, cond)
	if err != nil {
		return written{}, err
	}
	out, err := u.s.api.PutObject(u.ctx, &awss3.PutObjectInput{
		Bucket:        &u.s.bucket,
		Key:           &u.key,
		Body:          body,
		ContentLength: aws.Int64(size),
		IfNoneMatch:   c.ifNoneMatch,
		IfMatch:       c.ifMatch,
	}, opts...)
	if err != nil {
		return written{}, err
	}
	return writtenBy(out.ETag, out.ResultMetadata), nil
}

// putEmpty stores an empty object at the upload's key under cond.
func (u *upload) putEmpty(cond largo.Condition) (written, error) {
	return u.put(u.ctx, nil, 0, cond)
}

// stream is one store request whose body is fed through a pipe as the
// client's bytes arrive: nothing is buffered beyond the HTTP client's own.
type stream struct {
	pw   *io.PipeWriter
	done chan struct{}
	info written
	err  error
}

// startStream runs send with the read end of a new pipe.
func startStream(send func(r io.Reader) (written, error)) *stream {
	pr, pw := io.Pipe()
	st := &stream{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		st.info, st.err = send(pipeBody{pr})
		// Writers still blocked learn why the request ended.
		pr.CloseWithError(cmp.Or(st.err, io.ErrClosedPipe))
	}()
	return st
}

// write feeds p to the request; on failure it returns the request's own
// error, which says more than the broken pipe.
func (st *stream) write(p []byte) error {
	if _, err := st.pw.Write(p); err != nil {
		<-st.done
		return cmp.Or(st.err, err)
	}
	return nil
}

// close ends the body and waits for the answer.
func (st *stream) close() (written, error) {
	st.pw.Close()
	<-st.done
	return st.info, st.err
}

// cancel cuts the body short, which makes the server discard the request,
// and waits for the request to end.
func (st *stream) cancel() {
	st.pw.CloseWithError(errAborted)
	<-st.done
}

// pipeBody is the read end of a stream's pipe as a plain io.Reader: the
// SDK sends an *io.PipeReader chunked, without the Content-Length that S3
// requires and that the held-back last byte relies on.
type pipeBody struct{ r *io.PipeReader }

func (b pipeBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// streamPut sends a body of known length as one PUT, streamed as it
// arrives. Its last byte is held back until finish: until the server has
// every byte it stores nothing, so the object appears only at Commit (after
// the caller checked the digest), and an abort before that leaves no trace.
// The condition travels in the PUT's headers, so it is the one stated at
// Create.
type streamPut struct {
	u    *upload
	cond largo.Condition
	size int64
	sent int64
	held []byte
	st   *stream
}

func (p *streamPut) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if p.st == nil {
		u, cond, size := p.u, p.cond, p.size
		p.st = startStream(func(r io.Reader) (written, error) {
			return u.put(u.ctx, r, size, cond, u.s.streamed())
		})
	}
	if p.sent+int64(len(b)) == p.size {
		p.held = []byte{b[len(b)-1]}
		b = b[:len(b)-1]
		if len(b) == 0 {
			return nil
		}
	}
	if err := p.st.write(b); err != nil {
		return err
	}
	p.sent += int64(len(b))
	return nil
}

func (p *streamPut) finish(_ context.Context, cond largo.Condition) (written, error) {
	if cond != p.cond {
		p.abort()
		return written{}, fmt.Errorf("%w: a condition other than the one stated at creation", largo.ErrUnsupported)
	}
	if p.size == 0 {
		return p.u.putEmpty(cond)
	}
	if err := p.st.write(p.held); err != nil {
		return written{}, err
	}
	return p.st.close()
}

func (p *streamPut) abort() {
	if p.st != nil {
		p.st.cancel()
	}
}

// multipart is a multipart upload to an upload's key, begun on the first
// part and completed (under its condition) or aborted at the end.
type multipart struct {
	u  *upload
	id string

	mu    sync.Mutex
	parts []types.CompletedPart
}

// begin starts the multipart upload if it is not yet.
func (m *multipart) begin() error {
	if m.id != "" {
		return nil
	}
	u := m.u
	out, err := u.s.api.CreateMultipartUpload(u.ctx, &awss3.CreateMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.key})
	if err != nil {
		return err
	}
	id := aws.ToString(out.UploadId)
	if err := u.s.recordUpload(u.ctx, u.key, id); err != nil {
		// Untracked, a crash would leave it for ever: give it up now.
		u.s.api.AbortMultipartUpload(context.WithoutCancel(u.ctx), &awss3.AbortMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.key, UploadId: &id})
		return err
	}
	m.id = id
	u.s.active.Store(m.id, struct{}{})
	return nil
}

// sendPart sends part number n, of size bytes of r; opts are the
// request's options (Store.streamed, for a pipe).
func (m *multipart) sendPart(n int, r io.Reader, size int64, opts ...func(*awss3.Options)) error {
	u := m.u
	out, err := u.s.api.UploadPart(u.ctx, &awss3.UploadPartInput{
		Bucket:        &u.s.bucket,
		Key:           &u.key,
		UploadId:      &m.id,
		PartNumber:    aws.Int32(int32(n)),
		Body:          r,
		ContentLength: aws.Int64(size),
	}, opts...)
	if err != nil {
		return err
	}
	m.add(n, out.ETag)
	return nil
}

func (m *multipart) add(n int, etag *string) {
	m.mu.Lock()
	m.parts = append(m.parts, types.CompletedPart{PartNumber: aws.Int32(int32(n)), ETag: etag})
	m.mu.Unlock()
}

// complete makes the object of the parts sent visible under cond.
func (m *multipart) complete(ctx context.Context, cond largo.Condition) (written, error) {
	u := m.u
	slices.SortFunc(m.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	c, err := u.conditions(ctx, cond)
	if err != nil {
		return written{}, err
	}
	out, err := u.s.api.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket:          &u.s.bucket,
		Key:             &u.key,
		UploadId:        &m.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: m.parts},
		IfNoneMatch:     c.ifNoneMatch,
		IfMatch:         c.ifMatch,
	})
	if err != nil {
		return written{}, err
	}
	u.s.active.Delete(m.id)
	u.s.forgetUpload(m.id)
	m.id = ""
	return writtenBy(out.ETag, out.ResultMetadata), nil
}

// abort discards the parts sent. A failure is left to the sweep of stale
// multipart uploads.
func (m *multipart) abort() {
	if m.id == "" {
		return
	}
	u := m.u
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	_, err := u.s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.key, UploadId: &m.id})
	u.s.active.Delete(m.id)
	if err == nil {
		u.s.forgetUpload(m.id) // else the record lets Sweep try again
	}
	m.id = ""
}

// streamParts sends a body of known length, too large for one PUT, as a
// multipart upload whose parts are streamed one after the other as the
// bytes arrive: no part is buffered.
type streamParts struct {
	mp      *multipart
	size    int64
	partLen int64
	sent    int64
	st      *stream // the part being sent
	left    int64   // bytes the part still takes
	next    int     // its number
}

func (p *streamParts) write(b []byte) error {
	for len(b) > 0 {
		if p.st == nil {
			if err := p.mp.begin(); err != nil {
				return err
			}
			p.next++
			n, size := p.next, min(p.partLen, p.size-p.sent)
			p.left = size
			p.st = startStream(func(r io.Reader) (written, error) {
				return written{}, p.mp.sendPart(n, r, size, p.mp.u.s.streamed())
			})
		}
		k := min(int64(len(b)), p.left)
		if err := p.st.write(b[:k]); err != nil {
			return err
		}
		b, p.sent, p.left = b[k:], p.sent+k, p.left-k
		if p.left == 0 {
			_, err := p.st.close()
			p.st = nil
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *streamParts) finish(ctx context.Context, cond largo.Condition) (written, error) {
	return p.mp.complete(ctx, cond)
}

func (p *streamParts) abort() {
	if p.st != nil {
		p.st.cancel()
	}
	p.mp.abort()
}

// bufferedParts sends a body of unknown length. Bytes fill a part buffer;
// a full buffer is sent as a part while the next one fills, with at most
// PartConcurrency buffers at once (the one filling included), so the body
// holds at most PartSize x PartConcurrency bytes, in buffers outside the
// Go heap (newPartBuf) that the upload cycles from one part to the next
// and frees at its end. A body that ends within its first buffer is sent
// as one PUT at the end, without a multipart upload; it costs only the
// pages it wrote.
type bufferedParts struct {
	mp    *multipart
	buf   []byte
	all   [][]byte // every buffer made, to free at the end
	next  int
	slots chan struct{} // one per part in flight
	free  chan []byte   // buffers back from the parts sent
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error // the first failure of a part sent in the background
}

func (p *bufferedParts) write(b []byte) error {
	size := p.mp.u.s.partSize
	for len(b) > 0 {
		if p.buf == nil {
			p.buf = p.newBuf()
		}
		if int64(len(p.buf)) == size {
			if err := p.flush(); err != nil {
				return err
			}
		}
		k := min(int64(len(b)), size-int64(len(p.buf)))
		p.buf = append(p.buf, b[:k]...)
		b = b[k:]
	}
	return nil
}

func (p *bufferedParts) newBuf() []byte {
	b := newPartBuf(p.mp.u.s.partSize)
	p.all = append(p.all, b)
	return b
}

// flush sends the buffer as the next part, in the background when more
// than one part may be in flight, and takes a free buffer.
func (p *bufferedParts) flush() error {
	if err := p.failed(); err != nil {
		return err
	}
	if err := p.mp.begin(); err != nil {
		return err
	}
	s := p.mp.u.s
	if p.next++; p.next > maxParts {
		return fmt.Errorf("a body of unknown length larger than %d parts of %d bytes: %w", maxParts, s.partSize, largo.ErrTooLarge)
	}
	n, buf := p.next, p.buf
	if s.partConc == 1 {
		err := p.sendPart(n, buf)
		p.buf = buf[:0]
		return err
	}
	if p.slots == nil {
		p.slots = make(chan struct{}, s.partConc-1)
		p.free = make(chan []byte, s.partConc)
	}
	p.slots <- struct{}{} // waits while the other buffers are in flight
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.sendPart(n, buf)
		p.free <- buf[:0]
		<-p.slots
		if err != nil {
			p.mu.Lock()
			p.err = cmp.Or(p.err, err)
			p.mu.Unlock()
		}
	}()
	select {
	case p.buf = <-p.free:
	default:
		p.buf = p.newBuf()
	}
	return nil
}

// sendPart sends buf as part n, through a reader cut off when the request
// is over.
func (p *bufferedParts) sendPart(n int, buf []byte) error {
	r := newPartReader(buf)
	defer r.cut()
	return p.mp.sendPart(n, r, int64(len(buf)))
}

func (p *bufferedParts) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *bufferedParts) finish(ctx context.Context, cond largo.Condition) (written, error) {
	u := p.mp.u
	defer p.release()
	if p.next == 0 {
		if len(p.buf) == 0 {
			return u.putEmpty(cond)
		}
		r := newPartReader(p.buf)
		defer r.cut()
		return u.put(ctx, r, int64(len(p.buf)), cond)
	}
	if err := p.settle(); err != nil {
		return written{}, err
	}
	return p.mp.complete(ctx, cond)
}

// settle sends what is buffered as the last part and waits for every
// part in flight, once the body is all in: what finish does before it
// makes the object visible, and what a commit under a condition this
// process applies does before it checks the condition, so that a failed
// one aborts no part in flight (a server may go on writing a part whose
// request was cut, after the abort).
func (p *bufferedParts) settle() error {
	if p.next == 0 {
		return nil // one PUT at the end: nothing in flight
	}
	var err error
	if len(p.buf) > 0 {
		err = p.flush()
	}
	p.wg.Wait()
	return cmp.Or(err, p.failed())
}

func (p *bufferedParts) abort() {
	p.wg.Wait() // the upload's context is canceled: parts in flight end now
	p.mp.abort()
	p.release()
}

// release frees the buffers, once no part is in flight.
func (p *bufferedParts) release() {
	for _, b := range p.all {
		freePartBuf(b)
	}
	p.all, p.buf = nil, nil
}

// partReader reads a part buffer for one request. An HTTP client may go
// on reading a request's body after the request returned (its write loop
// ends on its own time); once cut, the reader returns an error instead of
// touching the buffer, which may then be freed.
type partReader struct {
	mu  sync.Mutex
	r   *bytes.Reader
	off bool
}

func newPartReader(b []byte) *partReader { return &partReader{r: bytes.NewReader(b)} }

func (p *partReader) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return 0, errAborted
	}
	return p.r.Read(b)
}

// Seek lets the client rewind the body to retry the request.
func (p *partReader) Seek(offset int64, whence int) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return 0, errAborted
	}
	return p.r.Seek(offset, whence)
}

func (p *partReader) cut() {
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
}

// copySender commits an adopted object: a server-side copy to the key,
// then the removal of the source. A copy under a condition, or of more
// than one copy may carry, is a multipart upload of copied ranges,
// completed under the condition (servers apply no condition of the target
// to a plain copy).
type copySender struct {
	u    *upload
	src  string // the source's key
	size int64
	etag string
	keep bool // a copy (largo.Copier): the source stays
}

func (c *copySender) write([]byte) error { return errors.New("an adopted upload takes no bytes") }

func (c *copySender) finish(ctx context.Context, cond largo.Condition) (written, error) {
	u := c.u
	var w written
	var err error
	switch {
	case c.size == 0:
		w, err = u.putEmpty(cond)
	case cond == (largo.Condition{}) && c.size <= u.s.copyPart:
		var out *awss3.CopyObjectOutput
		out, err = u.s.api.CopyObject(ctx, &awss3.CopyObjectInput{
			Bucket:            &u.s.bucket,
			Key:               &u.key,
			CopySource:        aws.String(copySource(u.s.bucket, c.src)),
			CopySourceIfMatch: nonEmpty(c.etag),
			// REPLACE: the source's metadata (its upload's) stays behind.
			MetadataDirective: types.MetadataDirectiveReplace,
		})
		if err == nil && out.CopyObjectResult != nil {
			w = written{etag: aws.ToString(out.CopyObjectResult.ETag), mod: aws.ToTime(out.CopyObjectResult.LastModified)}
		}
	default:
		w, err = c.copyParts(ctx, cond)
	}
	if err != nil {
		return w, err
	}
	if c.keep {
		return w, nil
	}
	// The copy is in place: a source that fails to go is left to whoever
	// staged it.
	u.s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &u.s.bucket, Key: &c.src})
	return w, nil
}

// copyParts copies the source in ranges of at most copyPart bytes into a
// multipart upload (PlacePart), completed under cond.
func (c *copySender) copyParts(ctx context.Context, cond largo.Condition) (written, error) {
	mp := &multipart{u: c.u}
	if err := mp.begin(); err != nil {
		return written{}, err
	}
	s := c.u.s
	n := int32(0)
	for off := int64(0); off < c.size; off += s.copyPart {
		n++
		etag, err := s.PlacePart(ctx, c.u.key, mp.id, n, []Span{{Key: c.src, Off: off, N: min(s.copyPart, c.size-off), ETag: c.etag}})
		if err != nil {
			mp.abort()
			return written{}, err
		}
		mp.add(int(n), &etag)
	}
	w, err := mp.complete(ctx, cond)
	if err != nil {
		mp.abort()
	}
	return w, err
}

func (c *copySender) abort() {}

// copySource is the x-amz-copy-source of key in bucket: the path,
// percent-encoded but for its slashes.
func copySource(bucket, key string) string {
	const hex = "0123456789ABCDEF"
	b := []byte(bucket + "/")
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~', c == '/':
			b = append(b, c)
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

// nonEmpty returns a pointer to s, or nil for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
