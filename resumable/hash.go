package resumable

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"hash"
	"io"
	"sync"

	"largo/internal/spool"
)

// An upload's SHA-256 is computed as its chunks arrive, so that finishing
// a large upload does not read it all again. The state of the hash after
// each chunk is kept by the staging beside the upload (the offset it
// covers, then the hash's binary state), so it survives restarts and moves
// between servers sharing a staging. When it does not cover exactly the
// bytes stored (a crash between a write and the save, a partial write), it
// is dropped and the finish reads the bytes instead.

// loadHash returns the hash of the first offset bytes of an upload, or nil.
func (s *dataStore) loadHash(ctx context.Context, id string, offset int64) hash.Hash {
	h := sha256.New()
	if offset == 0 {
		return h
	}
	b := s.st.LoadHash(ctx, id)
	if len(b) < 8 || int64(binary.BigEndian.Uint64(b)) != offset {
		return nil
	}
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[8:]); err != nil {
		return nil
	}
	return h
}

// saveHash keeps h as the hash of the first offset bytes of an upload, or,
// with h nil, forgets any.
func (s *dataStore) saveHash(ctx context.Context, id string, offset int64, h hash.Hash) {
	var state []byte
	if h != nil {
		st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return
		}
		state = append(binary.BigEndian.AppendUint64(nil, uint64(offset)), st...)
	}
	if err := s.st.SaveHash(ctx, id, state); err != nil {
		s.h.log.Warn("saving an upload's hash state", "id", id, "err", err)
	}
}

// finishedSum returns the SHA-256 of a whole upload of size bytes when the
// kept state covers all of it, or nil.
func (s *dataStore) finishedSum(ctx context.Context, id string, size int64) []byte {
	if h := s.loadHash(ctx, id, size); h != nil {
		return h.Sum(nil)
	}
	return nil
}

// countingTee hashes and counts what is read through it. n counts the
// bytes hashed.
type countingTee struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (t *countingTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	t.n += int64(n)
	return n, err
}

// teeBuffer is the size of the buffer WriteTo copies through.
const teeBuffer = 256 << 10

var teePool = sync.Pool{New: func() any { b := make([]byte, teeBuffer); return &b }}

// WriteTo copies the source to w through a spool (io.Copy, which tusd's
// stores use, calls it): the hash costs a second core instead of the
// transfer's time, and a file's writeback starts as it grows. When w takes
// less than a buffer, the hash covers bytes that were not written; n then
// differs from the count returned, and the caller drops the hash.
func (t *countingTee) WriteTo(w io.Writer) (int64, error) {
	bp := teePool.Get().(*[]byte)
	defer teePool.Put(bp)
	sw := spool.New(w, t.h)
	defer sw.Close()
	var written int64
	for {
		// Whole buffers keep the writes and the hand-offs few.
		n, rerr := io.ReadFull(t.r, *bp)
		if rerr == io.ErrUnexpectedEOF {
			rerr = io.EOF
		}
		if n > 0 {
			wn, werr := sw.Write((*bp)[:n])
			t.n += int64(n)
			written += int64(wn)
			if werr != nil {
				return written, werr
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}
