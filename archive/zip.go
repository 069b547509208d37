package archive

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"time"
	"unicode/utf8"
)

// The zip written here holds stored (uncompressed) entries, each file's
// CRC-32 written in a data descriptor after its bytes (the one kept for
// the file's version, else computed as the bytes pass), so every file is
// read at most once and every length is known from the walk alone: a
// local header, the data, a descriptor, and at the end one central
// directory record per entry and the end records. Zip64
// fields appear where sizes, offsets or counts pass what 32 or 16 bits
// hold, as Go's archive/zip and Info-ZIP write them. Every header is made
// by one function used both to write it and to measure it, so Size and
// Write cannot disagree.

// Zip record signatures, lengths and fields (APPNOTE.TXT).
const (
	sigLocal     = 0x04034b50
	sigCentral   = 0x02014b50
	sigDesc      = 0x08074b50
	sigEnd       = 0x06054b50
	sigEnd64     = 0x06064b50
	sigLocator64 = 0x07064b50

	localLen   = 30
	centralLen = 46
	end64Len   = 56

	max16 = 1<<16 - 1
	max32 = 1<<32 - 1

	flagDataDescriptor = 0x8
	flagUTF8           = 0x800
	extTimeID          = 0x5455
	zip64ID            = 0x0001

	version20   = 20 // what stored entries need
	version45   = 45 // with zip64 fields
	creatorUnix = 3

	// External attributes: Unix mode in the high half, MS-DOS bits low.
	fileAttrs = (0o100000 | 0o644) << 16    // regular file, rw-r--r--
	dirAttrs  = (0o040000|0o755)<<16 | 0x10 // folder, rwxr-xr-x, MS-DOS folder bit
)

type zipBuf []byte

func (b zipBuf) u16(v uint16) zipBuf { return binary.LittleEndian.AppendUint16(b, v) }
func (b zipBuf) u32(v uint32) zipBuf { return binary.LittleEndian.AppendUint32(b, v) }
func (b zipBuf) u64(v uint64) zipBuf { return binary.LittleEndian.AppendUint64(b, v) }

// zipFlags are the general purpose flags of e.
func zipFlags(e Entry) uint16 {
	var f uint16
	if !e.Info.IsDir {
		f |= flagDataDescriptor
	}
	if !isASCII(e.Path) && utf8.ValidString(e.Path) {
		f |= flagUTF8
	}
	return f
}

// localHeader is the local header of e. A file's CRC and sizes are left
// zero: the descriptor after its data holds them.
func localHeader(b zipBuf, e Entry) zipBuf {
	date, tm := msDosTime(modTime(e.Info))
	version := uint16(version20)
	if e.Info.Size >= max32 {
		version = version45
	}
	b = b.u32(sigLocal).u16(version).u16(zipFlags(e)).u16(0).u16(tm).u16(date)
	b = b.u32(0).u32(0).u32(0)
	b = b.u16(uint16(len(e.Path))).u16(9)
	b = append(b, e.Path...)
	return extTime(b, modTime(e.Info))
}

// descriptor is the data descriptor after a file of size bytes: 64-bit
// sizes when they need them.
func descriptor(b zipBuf, crc uint32, size int64) zipBuf {
	b = b.u32(sigDesc).u32(crc)
	if size >= max32 {
		return b.u64(uint64(size)).u64(uint64(size))
	}
	return b.u32(uint32(size)).u32(uint32(size))
}

// central is the central directory record of e, whose local header is at
// off.
func central(b zipBuf, e Entry, crc uint32, off int64) zipBuf {
	mt := modTime(e.Info)
	date, tm := msDosTime(mt)
	size := e.Info.Size
	zip64 := size >= max32 || off >= max32
	version := uint16(version20)
	if zip64 {
		version = version45
	}
	extra := 9
	if zip64 {
		extra += 28
	}
	attrs := uint32(fileAttrs)
	if e.Info.IsDir {
		attrs = dirAttrs
	}
	b = b.u32(sigCentral).u16(creatorUnix<<8 | version).u16(version).u16(zipFlags(e)).u16(0).u16(tm).u16(date).u32(crc)
	if zip64 {
		b = b.u32(max32).u32(max32)
	} else {
		b = b.u32(uint32(size)).u32(uint32(size))
	}
	b = b.u16(uint16(len(e.Path))).u16(uint16(extra)).u16(0).u16(0).u16(0).u32(attrs)
	if zip64 {
		b = b.u32(max32)
	} else {
		b = b.u32(uint32(off))
	}
	b = append(b, e.Path...)
	b = extTime(b, mt)
	if zip64 {
		b = b.u16(zip64ID).u16(24).u64(uint64(size)).u64(uint64(size)).u64(uint64(off))
	}
	return b
}

// end is what follows the central directory of records entries, size
// bytes long, at off: the zip64 end record and its locator when a count
// or an offset needs them, then the end record.
func end(b zipBuf, records, size, off int64) zipBuf {
	if records >= max16 || size >= max32 || off >= max32 {
		b = b.u32(sigEnd64).u64(end64Len - 12).u16(creatorUnix<<8 | version45).u16(version45)
		b = b.u32(0).u32(0).u64(uint64(records)).u64(uint64(records)).u64(uint64(size)).u64(uint64(off))
		b = b.u32(sigLocator64).u32(0).u64(uint64(off + size)).u32(1)
		records, size, off = max16, max32, max32
	}
	return b.u32(sigEnd).u16(0).u16(0).u16(uint16(records)).u16(uint16(records)).u32(uint32(size)).u32(uint32(off)).u16(0)
}

// zipLayout lays out a zip: for each entry its local header, and for a
// file its data and descriptor; at the end the central directory, one
// record per entry, and the end records.
//
// A file's CRC-32 goes in its descriptor and its central record. It is
// the one Options.CRC32 knows for the file's version, else computed as
// the bytes pass, which needs all of them in the window; it is not needed
// at all when neither record is in the window. While measuring, the
// layout notes where the data of the first file without a known CRC-32
// begins: a range may start no later.
type zipLayout struct {
	em      *emitter
	crcs    CRC32Func
	dir     string // temporary files
	cdStart int64  // where the central directory begins; -1 when measuring
	cdLen   int64  // the central records so far
	records int64
	cd      *spool // the central records the window holds
	cdAt    int64  // the offset of cd's first record
	b       zipBuf

	crcUntil int64 // measuring: see Plan.crcUntil; -1 until found
}

func newZipLayout(em *emitter, opt Options, cdStart int64) *zipLayout {
	return &zipLayout{em: em, crcs: opt.CRC32, dir: opt.TempDir, cdStart: cdStart, cdAt: -1, crcUntil: -1}
}

func (z *zipLayout) entry(e Entry) error {
	em := z.em
	off := em.pos
	if err := em.header(localHeader(z.b[:0], e)); err != nil {
		return err
	}
	recLen := int64(len(central(z.b[:0], e, 0, off)))
	recAt := z.cdStart + z.cdLen
	keep := z.cdStart >= 0 && em.wants(recAt, recLen)
	var crc uint32
	if !e.Info.IsDir {
		size := e.Info.Size
		dataAt := em.pos
		desc := descriptor(z.b[:0], 0, size)
		need := keep || em.wants(dataAt+size, int64(len(desc)))
		known := false
		switch {
		case z.cdStart < 0 && z.crcUntil < 0:
			// Measuring: the first file whose CRC-32 is unknown.
			if z.crcs != nil {
				crc, known = z.crcs(em.ctx, e.Name, e.Info.ETag)
			}
			if !known {
				z.crcUntil = dataAt
			}
		case need && z.crcs != nil:
			crc, known = z.crcs(em.ctx, e.Name, e.Info.ETag)
		}
		var h hash.Hash32
		if need && !known {
			if em.from > dataAt {
				return fmt.Errorf("%s: no CRC-32 is known for its version, and the range starts past its first byte: %w", e.Name, ErrChanged)
			}
			h = crc32.NewIEEE()
		}
		if err := em.data(e, h); err != nil {
			return err
		}
		if h != nil {
			crc = h.Sum32()
		}
		if err := em.bytes(descriptor(z.b[:0], crc, size)); err != nil {
			return err
		}
	}
	if keep {
		if z.cd == nil {
			z.cd, z.cdAt = &spool{dir: z.dir}, recAt
		}
		if _, err := z.cd.Write(central(z.b[:0], e, crc, off)); err != nil {
			return err
		}
	}
	z.cdLen += recLen
	z.records++
	return nil
}

// end writes the central directory (the records the window holds, from
// the spool) and the end records.
func (z *zipLayout) end() error {
	if z.crcUntil < 0 {
		z.crcUntil = math.MaxInt64 // every CRC-32 known
	}
	em := z.em
	start := em.pos
	if z.cd != nil {
		if err := em.skip(z.cdAt - start); err != nil {
			return err
		}
		if err := z.cd.copyTo(em); err != nil {
			return err
		}
	}
	if err := em.skip(start + z.cdLen - em.pos); err != nil {
		return err
	}
	return em.bytes(end(z.b[:0], z.records, z.cdLen, start))
}

func (z *zipLayout) close() {
	if z.cd != nil {
		z.cd.close()
	}
}

// spoolMemory is how much of a central directory is kept in memory before
// it moves to a temporary file: a few thousand files' worth.
const spoolMemory = 256 << 10

// spool holds bytes to send later: in memory while they are few, in a
// temporary file (removed from its folder at once) past spoolMemory.
type spool struct {
	dir string
	mem bytes.Buffer
	f   *os.File
}

func (s *spool) Write(p []byte) (int, error) {
	if s.f == nil && s.mem.Len()+len(p) > spoolMemory {
		f, err := os.CreateTemp(tempDir(s.dir), "largo-zip-*")
		if err != nil {
			return 0, err
		}
		os.Remove(f.Name())
		s.f = f
		if _, err := s.mem.WriteTo(f); err != nil {
			return 0, err
		}
		s.mem = bytes.Buffer{}
	}
	if s.f != nil {
		return s.f.Write(p)
	}
	return s.mem.Write(p)
}

// copyTo sends everything written to w.
func (s *spool) copyTo(w io.Writer) error {
	if s.f == nil {
		_, err := s.mem.WriteTo(w)
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(struct{ io.Writer }{w}, s.f)
	return err
}

func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// extTime appends the "extended timestamp" extra field Info-ZIP writes:
// the modification time in Unix seconds.
func extTime(b zipBuf, t time.Time) zipBuf {
	b = b.u16(extTimeID).u16(5)
	b = append(b, 1) // modification time present
	return b.u32(uint32(t.Unix()))
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
