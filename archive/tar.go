package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"iter"

	"github.com/klauspost/compress/zstd"

	"largo"
)

// tarBlock is the size of a tar block.
const tarBlock = 512

// tarHeader encodes the header of e into hb, as the archive holds it.
// Headers are deterministic: modes 0644 and 0755, no owners, whole-second
// times; Go's tar writer encodes each one (USTAR, or PAX for long names
// and sizes past 8 GiB).
func tarHeader(hb *bytes.Buffer, e Entry) error {
	hdr := &tar.Header{Name: e.Path, ModTime: modTime(e.Info), Mode: 0o644, Typeflag: tar.TypeReg, Size: e.Info.Size}
	if e.Info.IsDir {
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
	}
	hb.Reset()
	return tar.NewWriter(hb).WriteHeader(hdr)
}

// tarPad is the padding after a file of size bytes.
func tarPad(size int64) int64 { return (tarBlock - size%tarBlock) % tarBlock }

// tarLayout lays out a tar: each entry's header, its file's bytes and
// their padding; at the end, two zero blocks. A file's bytes come
// straight from the store, so that a file on disk reaches the socket
// through sendfile, as a plain download does.
type tarLayout struct {
	em *emitter
	hb bytes.Buffer
}

func (t *tarLayout) entry(e Entry) error {
	if err := tarHeader(&t.hb, e); err != nil {
		return err
	}
	if err := t.em.header(t.hb.Bytes()); err != nil {
		return err
	}
	if e.Info.IsDir {
		return nil
	}
	if err := t.em.data(e, nil); err != nil {
		return err
	}
	return t.em.zeros(tarPad(e.Info.Size))
}

// end writes the end of the archive: two zero blocks.
func (t *tarLayout) end() error { return t.em.zeros(2 * tarBlock) }

func (t *tarLayout) close() {}

// writeTarZst writes the tar p describes compressed with zstd, by the
// compressor opt.Compress gives, or without one by an encoder of its own
// at the fastest level, with one goroutine and a small window. A failure
// abandons the compressor: the stream is never closed as if complete.
func writeTarZst(ctx context.Context, w io.Writer, p Plan, entries iter.Seq2[Entry, error], s largo.Store, opt Options) error {
	compress := opt.Compress
	if compress == nil {
		compress = func(w io.Writer) (io.WriteCloser, func(), error) {
			zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
			return zw, nil, err
		}
	}
	zw, abandon, err := compress(w)
	if err != nil {
		return err
	}
	if err := write(ctx, zw, p, entries, s, 0, -1, opt); err != nil {
		if abandon != nil {
			abandon()
		}
		return err
	}
	return zw.Close()
}
