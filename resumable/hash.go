package resumable

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
)

// An upload's SHA-256 is computed as its chunks arrive, so that finishing
// a large upload does not read it all again. The state of the hash after
// each chunk is kept beside the upload (ID.sha256: the offset it covers,
// then the hash's binary state), so it survives restarts. When it does not
// cover exactly the bytes stored (a crash between a write and the save, a
// partial write), it is dropped and the finish reads the file instead.

func (s *dataStore) hashPath(id string) string { return s.binPath(id) + ".sha256" }

// loadHash returns the hash of the first offset bytes of an upload, or nil.
func (s *dataStore) loadHash(id string, offset int64) hash.Hash {
	h := sha256.New()
	if offset == 0 {
		return h
	}
	b, err := os.ReadFile(s.hashPath(id))
	if err != nil || len(b) < 8 || int64(binary.BigEndian.Uint64(b)) != offset {
		return nil
	}
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[8:]); err != nil {
		return nil
	}
	return h
}

// saveHash keeps h as the hash of the first offset bytes of an upload, or,
// with h nil, forgets any.
func (s *dataStore) saveHash(id string, offset int64, h hash.Hash) {
	if h == nil {
		if err := os.Remove(s.hashPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.h.log.Warn("removing an upload's hash state", "id", id, "err", err)
		}
		return
	}
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(offset))
	if err := os.WriteFile(s.hashPath(id), append(b, st...), 0o644); err != nil {
		s.h.log.Warn("saving an upload's hash state", "id", id, "err", err)
	}
}

// finishedSum returns the SHA-256 of a whole upload of size bytes when the
// kept state covers all of it, or nil.
func (s *dataStore) finishedSum(id string, size int64) []byte {
	if h := s.loadHash(id, size); h != nil {
		return h.Sum(nil)
	}
	return nil
}

// countingTee hashes and counts what is read through it.
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
