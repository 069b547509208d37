package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"iter"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// writeTar writes a tar stream. Headers are deterministic: modes 0644 and
// 0755, no owners, whole-second times; Go's tar writer encodes each one
// (USTAR, or PAX for long names and sizes past 8 GiB) into a small buffer,
// and the file's bytes follow straight from the store, so that a file on
// disk reaches the socket through sendfile, as a plain download does.
func writeTar(ctx context.Context, w io.Writer, entries iter.Seq2[Entry, error], data contents) error {
	var hb bytes.Buffer
	for e, err := range entries {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr := &tar.Header{Name: e.Path, ModTime: modTime(e.Info), Mode: 0o644, Typeflag: tar.TypeReg, Size: e.Info.Size}
		if e.Info.IsDir {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		hb.Reset()
		if err := tar.NewWriter(&hb).WriteHeader(hdr); err != nil {
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
		if pad := (tarBlock - e.Info.Size%tarBlock) % tarBlock; pad > 0 {
			if _, err := w.Write(zeroBlock[:pad]); err != nil {
				return err
			}
		}
	}
	// The end of the archive: two zero blocks.
	_, err := w.Write(zeroBlock[:2*tarBlock])
	return err
}

// tarBlock is the size of a tar block.
const tarBlock = 512

// writeTarZst writes a tar stream compressed with zstd at its fastest level,
// with one encoder goroutine and a small window so that memory stays bounded.
func writeTarZst(ctx context.Context, w io.Writer, entries iter.Seq2[Entry, error], data contents) error {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return err
	}
	if err := writeTar(ctx, zw, entries, data); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}

// zip header flags.
const (
	flagDataDescriptor = 0x8
	flagUTF8           = 0x800
	extTimeID          = 0x5455
)

// writeZip writes a zip of stored (uncompressed) entries. Each file's
// CRC-32 is computed as its bytes pass and written in a data descriptor
// after them, so every file is read once; zip64 records are used where
// sizes or offsets pass 4 GiB. Headers are built here, not by the zip
// package's compressor path, so that Size can count the same bytes.
func writeZip(ctx context.Context, w io.Writer, entries iter.Seq2[Entry, error], data contents) error {
	zw := zip.NewWriter(w)
	for e, err := range entries {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		mt := modTime(e.Info)
		fh := &zip.FileHeader{Name: e.Path, Method: zip.Store, Modified: mt}
		//lint:ignore SA1019 CreateRaw writes the MS-DOS fields as given; only CreateHeader derives them from Modified.
		fh.ModifiedDate, fh.ModifiedTime = msDosTime(mt)
		fh.Extra = extTime(mt)
		if utf8.ValidString(e.Path) && !isASCII(e.Path) {
			fh.Flags |= flagUTF8
		}
		if e.Info.IsDir {
			fh.SetMode(0o755 | 1<<31) // fs.ModeDir
			if _, err := zw.CreateRaw(fh); err != nil {
				return err
			}
			continue
		}
		fh.SetMode(0o644)
		fh.Flags |= flagDataDescriptor
		fh.CompressedSize64 = uint64(e.Info.Size)
		fh.UncompressedSize64 = uint64(e.Info.Size)
		fw, err := zw.CreateRaw(fh)
		if err != nil {
			return err
		}
		crc := crc32.NewIEEE()
		if err := data(e, io.MultiWriter(fw, crc)); err != nil {
			return err
		}
		// The descriptor and the central directory read the header's CRC
		// when the next entry begins or the archive closes.
		fh.CRC32 = crc.Sum32()
	}
	return zw.Close()
}

// extTime is the "extended timestamp" extra field Info-ZIP writes: the
// modification time in Unix seconds.
func extTime(t time.Time) []byte {
	b := make([]byte, 9)
	binary.LittleEndian.PutUint16(b[0:], extTimeID)
	binary.LittleEndian.PutUint16(b[2:], 5)
	b[4] = 1 // modification time present
	binary.LittleEndian.PutUint32(b[5:], uint32(t.Unix()))
	return b
}

// msDosTime encodes t in the MS-DOS date and time fields of a zip header.
func msDosTime(t time.Time) (date, tm uint16) {
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tm
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
