package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
)

// The ranged GETs of a file ask for a window that starts at firstWindow and
// doubles with each request up to maxWindow. A short range (a video
// player's probe, one part of a multi-range request) then costs a short
// request, and a long download few requests. The window bounds what one
// request may ask for, not what is read: bytes leave the connection only as
// the caller reads them, so a window never becomes a buffer.
const (
	firstWindow = 512 << 10
	maxWindow   = 64 << 20
)

// skipLimit is how far ahead a Seek may land inside the current window and
// still be reached by reading and discarding, which is cheaper than a new
// request.
const skipLimit = 64 << 10

// file is an open object: a largo.File whose reads are ranged GETs.
type file struct {
	s      *Store
	name   string
	key    string
	etag   string // the If-Match of every GET, or "" for none
	info   largo.Info
	ctx    context.Context
	cancel context.CancelFunc

	pos    int64         // offset of the next Read
	window int64         // length the next GET asks for
	body   io.ReadCloser // the current GET's body, or nil
	at     int64         // offset of the body's next byte
	end    int64         // offset just past the body's last byte
	closed bool
}

var _ largo.File = (*file)(nil)

// newFile opens the object o of name. Nothing is fetched until Read.
func newFile(ctx context.Context, s *Store, name string, o object) *file {
	ctx, cancel := context.WithCancel(ctx)
	info := fileInfo(name, o)
	return &file{
		s:      s,
		name:   name,
		key:    s.key(name),
		etag:   info.ETag,
		info:   info,
		ctx:    ctx,
		cancel: cancel,
		window: firstWindow,
	}
}

// Info implements largo.File.
func (f *file) Info() largo.Info { return f.info }

// String returns the file's name, for logs.
func (f *file) String() string { return f.name }

// Read implements io.Reader. It returns at most what the current request
// has left, and an error wrapping largo.ErrPrecondition if the object was
// replaced since Open.
func (f *file) Read(p []byte) (int, error) {
	if f.closed {
		return 0, fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.pos >= f.info.Size {
		return 0, io.EOF
	}
	if f.body != nil && f.at != f.pos {
		f.skip()
	}
	if f.body == nil {
		if err := f.fetch(); err != nil {
			return 0, err
		}
	}
	n, err := f.body.Read(p[:min(int64(len(p)), f.end-f.at)])
	f.at += int64(n)
	f.pos += int64(n)
	switch {
	case f.at == f.end:
		f.drop() // the window is done; its connection goes back to the pool
		err = nil
	case err == io.EOF:
		f.drop()
		err = fmt.Errorf("%s: the store's answer ended at %d of %d: %w", f.name, f.at, f.end, io.ErrUnexpectedEOF)
	case err != nil:
		f.drop()
		err = mapErr(f.name, err)
	}
	return n, err
}

// skip brings the body to pos: by discarding a few bytes when pos is a
// little ahead inside the window, otherwise by ending the request, so that
// the next one starts at pos.
func (f *file) skip() {
	if gap := f.pos - f.at; gap > 0 && gap <= skipLimit && f.pos < f.end {
		n, err := io.CopyN(io.Discard, f.body, gap)
		f.at += n
		if err == nil {
			return
		}
	}
	f.drop()
}

// fetch starts a GET of the next window from pos, conditional on the ETag
// seen at Open. An object without an ETag (a file put in a gateway's folder
// behind its back) gets no condition: If-Unmodified-Since would be the next
// best guard, but servers compare it with times finer than the second they
// report, and refuse objects that never changed.
func (f *file) fetch() error {
	end := min(f.info.Size, f.pos+f.window)
	f.window = min(2*f.window, maxWindow)
	in := &awss3.GetObjectInput{
		Bucket: &f.s.bucket,
		Key:    &f.key,
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", f.pos, end-1)),
	}
	if f.etag != "" {
		in.IfMatch = &f.etag
	}
	out, err := f.s.api.GetObject(f.ctx, in)
	if err != nil {
		err = mapErr(f.name, err)
		if errors.Is(err, largo.ErrPrecondition) {
			err = fmt.Errorf("changed since it was opened: %w", err)
		}
		return err
	}
	cr := aws.ToString(out.ContentRange)
	if start, ok := rangeStart(cr); !ok || start != f.pos {
		// A server that ignored the range (or answered another one)
		// would have us splice the wrong bytes in.
		out.Body.Close()
		return fmt.Errorf("%s: asked the store for bytes from %d, got Content-Range %q", f.name, f.pos, cr)
	}
	f.body, f.at, f.end = out.Body, f.pos, end
	return nil
}

// rangeStart returns the first offset of a GET's answer from its
// Content-Range: its start, or 0 for a whole-object answer (none).
func rangeStart(cr string) (int64, bool) {
	if cr == "" {
		return 0, true
	}
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	first, _, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(first, 10, 64)
	return n, err == nil
}

// drop ends the current request, if any.
func (f *file) drop() {
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
}

// Seek implements io.Seeker. It only moves the offset; the next Read
// fetches from there. Offsets past the end are allowed and read as EOF.
func (f *file) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.info.Size
	default:
		return 0, fmt.Errorf("%s: seek: invalid whence %d", f.name, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("%s: seek: negative offset %d", f.name, offset)
	}
	f.pos = offset
	return offset, nil
}

// Close ends the request in flight, if any. The file cannot be used after.
func (f *file) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.cancel()
	f.drop()
	return nil
}
