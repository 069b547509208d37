package s3api

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"largo"
	"largo/ingest"
	"largo/internal/spool"
)

// On a folder, the parts of an upload are staged in its state area,
// under .largo/s3api/staged/ID/, reached through the folder's os.Root like
// every other file of largo's. A part's place in the file is not known
// until Complete lists the parts, but clients cut a file into parts of
// one size (all but the last): the first part of 5 MiB or more (or part
// 1) fixes the upload's stride, and every part that fits goes at
// (n-1)*stride in one sparse file, data. Complete then has the file
// already: it truncates it to its length and the write pipeline renames
// it into place, without a copy. A part that does not fit its place, or
// that is sent again while the place holds a part already (so that a
// retry that fails cannot spoil a part that was in), goes to a file of
// its own beside it; Complete copies such a part into its place
// (copy_file_range: in the kernel, no byte through largo). Parts that
// make no such layout (numbers with gaps, sizes that differ) are joined
// into a file of their own by the kernel, part by part.
//
// The SHA-256 of the file is a chain over its bytes in order: it is
// computed as parts come in order (advance), read back from the page
// cache, so that Complete has at most the last parts to hash.

// stagingDir is where the parts are, in the folder's state area.
const stagingDir = largo.StateDir + "/s3api/staged"

// diskStaging stages parts in a folder's state area.
type diskStaging struct {
	root *os.Root
}

var _ staging = (*diskStaging)(nil)

func newDiskStaging(root *os.Root) (*diskStaging, error) {
	if err := root.MkdirAll(stagingDir, 0o700); err != nil {
		return nil, err
	}
	return &diskStaging{root: root}, nil
}

func (d *diskStaging) dir(id string) string  { return stagingDir + "/" + id }
func (d *diskStaging) data(id string) string { return d.dir(id) + "/data" }

func (d *diskStaging) slots() bool { return true }

func (d *diskStaging) begin(_ context.Context, id string, _ *upload) error {
	if err := d.root.MkdirAll(d.dir(id), 0o700); err != nil {
		return err
	}
	// The mode of every file largo writes (less the umask): the file is
	// renamed into place as it is. Its folder, 0700, keeps it the
	// server's meanwhile.
	f, err := d.root.OpenFile(d.data(id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		d.root.RemoveAll(d.dir(id))
		return err
	}
	return f.Close()
}

func (d *diskStaging) put(_ context.Context, id string, up *upload, n int, size int64, r io.Reader, slot bool) (part, error) {
	p := part{N: n, Size: size}
	var f *os.File
	var err error
	if slot {
		f, err = d.root.OpenFile(d.data(id), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Seek(int64(n-1)*up.Stride, io.SeekStart)
		}
	} else {
		p.Side = fmt.Sprintf("%05d.%s", n, newID()[:12])
		f, err = d.root.OpenFile(d.dir(id)+"/"+p.Side, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return p, errNoSuchUpload // removed meanwhile
	}
	if err != nil {
		return p, err
	}
	got, err := copyAll(spool.NewWriteback(f), r)
	if err == nil && got != size {
		err = fmt.Errorf("%d bytes of %d: %w", got, size, largo.ErrBodyIncomplete)
	}
	if serr := f.Sync(); err == nil {
		err = serr
	}
	f.Close()
	if err != nil && p.Side != "" {
		d.root.Remove(d.dir(id) + "/" + p.Side)
	}
	return p, err
}

// copyAll copies r to w until r ends, through a pooled buffer.
func copyAll(w io.Writer, r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *bp)
}

// open returns the bytes of part p.
func (d *diskStaging) open(id string, up *upload, p part) (io.ReadCloser, error) {
	if p.Side != "" {
		return d.root.Open(d.dir(id) + "/" + p.Side)
	}
	f, err := d.root.Open(d.data(id))
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, int64(p.N-1)*up.Stride, p.Size), f}, nil
}

// inPlace reports whether parts, in order, are all at their places in
// the upload's file once those beside it are copied there: numbered from
// 1 without a gap, each but the last of the stride, the last no longer.
func inPlace(stride int64, parts []part) bool {
	if stride <= 0 {
		return false
	}
	for i, p := range parts {
		if p.N != i+1 || p.Size > stride || i < len(parts)-1 && p.Size != stride {
			return false
		}
	}
	return true
}

func (d *diskStaging) assemble(ctx context.Context, id string, up *upload, parts []part) (ingest.Staged, error) {
	var total int64
	for _, p := range parts {
		total += p.Size
	}
	name := d.data(id)
	if inPlace(up.Stride, parts) {
		if err := d.settle(id, up, parts, total); err != nil {
			return ingest.Staged{}, err
		}
	} else {
		name = d.dir(id) + "/join"
		if err := d.join(id, up, parts, name); err != nil {
			d.root.Remove(name)
			return ingest.Staged{}, err
		}
	}
	sum, err := d.hash(ctx, name, up, parts)
	if err != nil {
		return ingest.Staged{}, err
	}
	return ingest.Staged{Name: name, Size: total, SHA256: sum}, nil
}

// settle copies the parts kept beside the file into their places, and
// cuts the file to its length.
func (d *diskStaging) settle(id string, up *upload, parts []part, total int64) error {
	f, err := d.root.OpenFile(d.data(id), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range parts {
		if p.Side == "" {
			continue
		}
		if err := d.copyPart(f, int64(p.N-1)*up.Stride, id, up, p); err != nil {
			return err
		}
	}
	if err := f.Truncate(total); err != nil {
		return err
	}
	return f.Sync()
}

// join copies the parts, in order, into a file of their own, name.
func (d *diskStaging) join(id string, up *upload, parts []part, name string) error {
	f, err := d.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644) // as the data file (begin)
	if err != nil {
		return err
	}
	defer f.Close()
	var at int64
	for _, p := range parts {
		if err := d.copyPart(f, at, id, up, p); err != nil {
			return err
		}
		at += p.Size
	}
	return f.Sync()
}

// copyPart copies part p's bytes into f at off, file to file: the kernel
// copies them (copy_file_range; a reflink where the file system shares
// blocks).
func (d *diskStaging) copyPart(f *os.File, off int64, id string, up *upload, p part) error {
	src, at := d.dir(id)+"/"+p.Side, int64(0)
	if p.Side == "" {
		src, at = d.data(id), int64(p.N-1)*up.Stride
	}
	sf, err := d.root.Open(src)
	if err != nil {
		return err
	}
	defer sf.Close()
	if _, err := sf.Seek(at, io.SeekStart); err != nil {
		return err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	n, err := f.ReadFrom(&io.LimitedReader{R: sf, N: p.Size})
	if err == nil && n != p.Size {
		err = fmt.Errorf("part %d: %d bytes, not %d: %w", p.N, n, p.Size, io.ErrUnexpectedEOF)
	}
	return err
}

// hash returns the SHA-256 of the assembled file name: from the hash of
// its first parts when it is theirs, reading only the rest.
func (d *diskStaging) hash(ctx context.Context, name string, up *upload, parts []part) ([]byte, error) {
	h := sha256.New()
	var from int64
	if ph := up.Hashed; ph != nil && ph.N <= len(parts) && ph.ETags == etagChain(parts[:ph.N]) && parts[ph.N-1].N == ph.N {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(ph.State); err == nil {
			from = ph.Size
		} else {
			h.Reset()
		}
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	if _, err := copyAll(h, ctxReader{ctx, f}); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// ctxReader is a reader that stops when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (d *diskStaging) drop(_ context.Context, id string, p part) {
	if p.Side != "" {
		d.root.Remove(d.dir(id) + "/" + p.Side)
	}
}

func (d *diskStaging) remove(_ context.Context, id string, _ *upload) error {
	if !validUploadID(id) {
		return fmt.Errorf("upload %q: %w", id, largo.ErrInvalidName)
	}
	return d.root.RemoveAll(d.dir(id))
}

// etagChain is the digest of the ETags of parts, in order: what tells
// that the hash of an upload's first parts is the hash of these. It is a
// chain (chainETag), so that one more part extends it.
func etagChain(parts []part) string {
	c := ""
	for _, p := range parts {
		c = chainETag(c, p.ETag)
	}
	return c
}

// chainETag extends the digest of the ETags of parts, c, by one more.
func chainETag(c, etag string) string {
	sum := sha256.Sum256([]byte(c + "\x00" + etag))
	return hex.EncodeToString(sum[:])
}

// extend returns the hash of an upload's first parts extended by the
// bytes of next, read from r.
func extend(ph *prefixHash, next part, r io.Reader) (*prefixHash, error) {
	h := sha256.New()
	if ph != nil {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(ph.State); err != nil {
			return nil, err
		}
	}
	if _, err := copyAll(h, io.LimitReader(r, next.Size)); err != nil {
		return nil, err
	}
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	size, chain := next.Size, ""
	if ph != nil {
		size, chain = size+ph.Size, ph.ETags
	}
	return &prefixHash{N: next.N, ETags: chainETag(chain, next.ETag), Size: size, State: state}, nil
}

// bucketStaging stages the parts of an upload in a multipart upload of
// the bucket at the object's own key: each part streams into it as it
// arrives, its last byte held back until what the request says the part
// hashes to is checked, so that a part that fails its checks is never
// stored; Complete completes it, in one call.
type bucketStaging struct {
	st bucketStore
}

var _ staging = (*bucketStaging)(nil)

func (b *bucketStaging) slots() bool { return false }

func (b *bucketStaging) begin(ctx context.Context, _ string, up *upload) error {
	_, id, err := b.st.BeginAssembly(ctx, up.Name)
	if err != nil {
		return err
	}
	up.Assembly = id
	return nil
}

func (b *bucketStaging) put(ctx context.Context, _ string, up *upload, n int, size int64, r io.Reader, _ bool) (part, error) {
	if _, err := b.st.WriteAssemblyPart(ctx, up.Name, up.Assembly, int32(n), &heldBack{r: r, left: size}, size); err != nil {
		return part{}, err
	}
	return part{N: n, Size: size}, nil
}

func (b *bucketStaging) assemble(_ context.Context, _ string, up *upload, parts []part) (ingest.Staged, error) {
	var total int64
	for _, p := range parts {
		total += p.Size
	}
	return ingest.Staged{Assembly: up.Assembly, Size: total}, nil
}

func (b *bucketStaging) drop(context.Context, string, part) {}

func (b *bucketStaging) remove(ctx context.Context, _ string, up *upload) error {
	if up.Assembly == "" {
		return nil
	}
	return b.st.AbortAssembly(ctx, up.Name, up.Assembly)
}

// heldBack passes on a body of a known length but its last byte, which
// it gives only once the body has ended (io.EOF from r, where the checks
// of checked run): a body that fails them never reaches the bucket
// whole, so the bucket stores nothing of it.
type heldBack struct {
	r     io.Reader
	left  int64 // bytes still to pass, the held-back one included
	ended bool  // r ended, its checks passed
	err   error
}

func (h *heldBack) Read(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if h.left > 1 {
		if int64(len(p)) > h.left-1 {
			p = p[:h.left-1]
		}
		n, err := h.r.Read(p)
		h.left -= int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			h.err = err
		}
		return n, err
	}
	if !h.ended {
		// The last byte, then the end of r: read past it, so that r's
		// checks run before the byte goes on.
		var b [2]byte
		n, err := io.ReadAtLeast(h.r, b[:], 2)
		switch {
		case n > int(h.left):
			err = errDecodedLength
		case n < int(h.left):
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
		case err == io.ErrUnexpectedEOF || err == io.EOF:
			err = nil // r ended after exactly the bytes expected
		}
		if err != nil {
			h.err = err
			return 0, err
		}
		h.ended = true
		if h.left == 1 {
			h.left = 0
			p[0] = b[0]
			return 1, nil
		}
	}
	h.err = io.EOF
	return 0, io.EOF
}
