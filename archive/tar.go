package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"iter"

	"github.com/klauspost/compress/zstd"
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

// tarSize is the length of the tar of entries: each header as it will be
// written, each file's size and padding, and the two zero blocks at the
// end.
func tarSize(ctx context.Context, entries iter.Seq2[Entry, error]) (int64, error) {
	var hb bytes.Buffer
	var n int64
	for e, err := range entries {
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = tarHeader(&hb, e)
		}
		if err != nil {
			return 0, err
		}
		n += int64(hb.Len())
		if !e.Info.IsDir {
			n += e.Info.Size + tarPad(e.Info.Size)
		}
	}
	return n + 2*tarBlock, nil
}

// writeTar writes a tar stream: each header from a small buffer, and the
// file's bytes straight from the store, so that a file on disk reaches
// the socket through sendfile, as a plain download does.
func writeTar(ctx context.Context, w io.Writer, entries iter.Seq2[Entry, error], data contents) error {
	var hb bytes.Buffer
	for e, err := range entries {
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = tarHeader(&hb, e)
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(hb.Bytes()); err != nil {
			return err
		}
		if e.Info.IsDir {
			continue
		}
		if err := data(e, w); err != nil {
			return err
		}
		if pad := tarPad(e.Info.Size); pad > 0 {
			if _, err := w.Write(zeroBlock[:pad]); err != nil {
				return err
			}
		}
	}
	// The end of the archive: two zero blocks.
	_, err := w.Write(zeroBlock[:2*tarBlock])
	return err
}

// writeTarZst writes a tar stream compressed with zstd, by the compressor
// compress gives, or without one by an encoder of its own at the fastest
// level, with one goroutine and a small window.
func writeTarZst(ctx context.Context, w io.Writer, entries iter.Seq2[Entry, error], data contents, compress func(io.Writer) (io.WriteCloser, func(), error)) error {
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
	if err := writeTar(ctx, zw, entries, data); err != nil {
		if abandon != nil {
			abandon()
		}
		return err
	}
	return zw.Close()
}
