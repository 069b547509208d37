// Package archive streams a folder of a largo.Store as one zip, tar or
// tar.zst archive, straight into a writer: nothing is produced ahead of the
// reader, and memory stays bounded whatever the folder's size. Each
// folder is listed through package listing, sorted within its memory
// budget; a zip's central directory, one record per file, is written to a
// temporary file past a few hundred kilobytes, not kept in memory.
//
// The order is deterministic (depth-first, by name), hidden names are
// never included (stores do not list them), and folders reached through a
// symbolic link are not descended into, so a link cannot make a cycle.
//
// An archive's bytes are a function of its walk: the headers, generated
// from each entry's path, size and time, and each file's content, which
// its ETag names. Measure walks once, opening no file, and returns a Plan:
// the exact length (tar, and zip, whose entries are stored and whose
// CRC-32 goes in a data descriptor after the data), and an ETag, a
// SHA-256 over the format, the layout's version, every header and every
// file's ETag and size. The length of a terabyte folder costs its
// listing.
//
// Because the bytes are known by arithmetic, any range of them can be
// written without producing what comes before (WriteRange): whole entries
// are skipped by their lengths, a header the range starts inside is
// generated and trimmed, and a file the range starts inside is opened and
// sought. A zip's CRC-32s are the exception: a file's is needed in its
// descriptor and in the central directory, so a range that does not send
// a file's bytes from its first needs that CRC-32 kept from when the file
// was written (Options.CRC32). A tar.zst is compressed: it is only ever
// written whole.
//
// Writing walks the folder again. Every file is checked, when opened,
// against the ETag the walk listed, and the walk's own hash against the
// Plan's ETag once the walk ends; the last byte of a range is held until
// then. A folder that changed between Measure and Write ends the write
// with an error wrapping ErrChanged before the last byte, so a client sees
// a short archive or range, never a complete-looking mix of two versions.
// Both stop when their context is done.
package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path"
	"strings"
	"time"

	"largo"
	"largo/listing"
)

// Format is an archive format.
type Format string

// The formats.
const (
	Zip    Format = "zip"
	Tar    Format = "tar"
	TarZst Format = "tar.zst"
)

// Formats lists every Format.
var Formats = []Format{Zip, Tar, TarZst}

// ParseFormat returns the Format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown archive format %q (zip, tar or tar.zst)", s)
}

// Top returns the folder an archive of the folder name holds its
// entries in, and the archive's file name before its extension: name's
// last element, or "files" for the root.
func Top(name string) string {
	if name == "" {
		return "files"
	}
	return path.Base(name)
}

// Ext is the file name extension of the format, with its dot.
func (f Format) Ext() string { return "." + string(f) }

// ContentType is the media type of the format.
func (f Format) ContentType() string {
	switch f {
	case Zip:
		return "application/zip"
	case Tar:
		return "application/x-tar"
	}
	return "application/zstd"
}

// ErrChanged is the error of an archive whose files changed or vanished
// while it was being written.
var ErrChanged = errors.New("a file changed while the archive was written")

// Entry is one file or folder of an archive.
type Entry struct {
	// Path is the entry's name inside the archive, slash-separated; a
	// folder's ends with a slash.
	Path string
	// Name is the store name to read a file from.
	Name string
	// Info is the metadata the walk found.
	Info largo.Info
}

// Walk yields the entries below the folder dir, under a top folder named
// top, depth-first with each folder's entries sorted by name, each folder
// listed within the memory lc allows. keep, if not nil, filters each
// folder's listing. A folder that may be seen but not listed (below dir)
// is in the archive, empty; a linked folder is not; a linked file is, with
// what it leads to.
func Walk(ctx context.Context, s largo.Store, dir, top string, lc listing.Config, keep listing.Filter) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		stopped := false
		err := largo.WalkDir(ctx, lc.Sorted(s, listing.ByName, keep), dir, func(name string, in largo.Info, err error) error {
			path := top + "/" + strings.TrimPrefix(name[len(dir):], "/")
			switch {
			case err != nil && name != dir && (errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized)):
				return nil // a folder that may be seen but not listed: in the archive, empty
			case err != nil:
				return err
			case in.IsDir && in.Link:
				return nil // a linked folder could lead back up: a cycle
			case in.IsDir && name != dir:
				path += "/"
			}
			if !yield(Entry{Path: path, Name: name, Info: in}, nil) {
				stopped = true
				return largo.SkipAll
			}
			return nil
		})
		if err != nil && !stopped {
			yield(Entry{}, err)
		}
	}
}

// Options are what measuring and writing an archive need besides its
// entries. The zero value compresses tar.zst with an encoder of its own,
// puts temporary files in os.TempDir() and knows no file's CRC-32.
type Options struct {
	// Compress returns the compressor of a tar.zst archive writing to w.
	// Its Close ends the stream; on failure the archive only calls
	// abandon, if it is not nil.
	Compress func(w io.Writer) (zw io.WriteCloser, abandon func(), err error)
	// TempDir is the folder of temporary files (a zip's central
	// directory, past a few hundred kilobytes); "" means os.TempDir().
	TempDir string
	// CRC32, if not nil, tells the CRC-32 of a file's version kept from
	// when it was written. A zip uses it instead of computing the CRC-32
	// as the bytes pass (so that they can go out by sendfile), and a zip
	// range can start past a file's first byte only when its CRC-32 is
	// known (see Plan.Ranges). Measure asks it for every file, in order,
	// until the first that it does not know.
	CRC32 CRC32Func
}

// CRC32Func returns the CRC-32 (IEEE) of the version etag of the store
// file name, without reading the file, or false when none is known for
// that version. It must be safe for concurrent use.
type CRC32Func func(ctx context.Context, name, etag string) (crc uint32, ok bool)

// Layout is the version of the layout this package writes: the choices
// (header fields, modes, times, record order) that the bytes depend on
// besides the entries. It is part of every ETag, so a change of layout
// is a change of ETag, and no range of an old archive is answered from a
// new one.
const Layout = 1

// Plan describes an archive before its first byte, from one walk that
// reads no file.
type Plan struct {
	// Format is the archive's format.
	Format Format
	// Size is the exact length in bytes, or -1 for a tar.zst.
	Size int64
	// ETag is the archive's entity tag, quotes included: strong for a tar
	// or a zip, weak (W/) for a tar.zst, whose bytes depend on the
	// compressor, and for an archive holding a file that has no ETag.
	ETag string

	sum    []byte // the walk's hash, which ETag spells
	strong bool   // every file had an ETag
	// crcUntil is, for a zip, the offset of the data of the first file
	// whose CRC-32 is not known: a range may start at or before it;
	// math.MaxInt64 when every CRC-32 is known.
	crcUntil int64
	cdStart  int64 // a zip's central directory
}

// Ranges reports whether a range starting at offset start can be written
// (WriteRange): never in a tar.zst or an archive with a weak ETag; in a
// zip, only from where every file whose data begins before start has a
// known CRC-32.
func (p Plan) Ranges(start int64) bool {
	switch {
	case p.Format == TarZst || !p.strong || start < 0 || start >= p.Size:
		return false
	case p.Format == Zip:
		return start <= p.crcUntil
	}
	return true
}

// Measure walks entries once and returns the Plan of their archive in
// format: its length by arithmetic over the headers and the files' sizes,
// and its ETag. No file is opened.
func Measure(ctx context.Context, format Format, entries iter.Seq2[Entry, error], opt Options) (Plan, error) {
	em := newEmitter(ctx, format, nil, nil, 0, 0)
	lay, err := newLayout(em, format, opt, -1)
	if err != nil {
		return Plan{}, err
	}
	if err := walkWith(ctx, em, lay, entries); err != nil {
		return Plan{}, err
	}
	cdStart := em.pos
	if err := em.settle(nil); err != nil {
		return Plan{}, err
	}
	if err := lay.end(); err != nil {
		return Plan{}, err
	}
	p := Plan{Format: format, Size: em.pos, sum: em.sum.Sum(nil), strong: !em.weak, cdStart: cdStart}
	p.ETag = fmt.Sprintf(`"%s-%x"`, format, p.sum[:16])
	if format == TarZst {
		p.Size = -1
	}
	if format == TarZst || em.weak {
		p.ETag = "W/" + p.ETag
	}
	if z, ok := lay.(*zipLayout); ok {
		p.crcUntil = z.crcUntil
	}
	return p, nil
}

// Write writes the whole archive p describes to w, walking entries again
// and reading each file from s. A folder that changed since p was
// measured, so that the archive would differ from p's, ends Write with an
// error wrapping ErrChanged, at the latest before the archive's end (a
// tar.zst's compressed stream is then not closed); so does a file that
// changed between the walk and its copy.
func Write(ctx context.Context, w io.Writer, p Plan, entries iter.Seq2[Entry, error], s largo.Store, opt Options) error {
	if p.Format == TarZst {
		return writeTarZst(ctx, w, p, entries, s, opt)
	}
	return write(ctx, w, p, entries, s, 0, p.Size, opt)
}

// WriteRange writes the n bytes of the archive p describes from offset
// start on, which p.Ranges(start) must allow, without producing what
// comes before: whole entries are skipped by arithmetic, and a file the
// range starts inside is sought. Files are opened only for the bytes the
// range holds, each checked against the ETag the walk lists; the walk
// goes on to its end all the same, and its hash is compared with p's
// before the range's last byte is written, so that a folder that changed
// since p was measured never yields a complete range (the error wraps
// ErrChanged).
func WriteRange(ctx context.Context, w io.Writer, p Plan, entries iter.Seq2[Entry, error], s largo.Store, start, n int64, opt Options) error {
	if !p.Ranges(start) || n <= 0 || start+n > p.Size {
		return fmt.Errorf("archive: the %s archive cannot be written from %d for %d bytes", p.Format, start, n)
	}
	return write(ctx, w, p, entries, s, start, start+n, opt)
}

// write writes the bytes [from, to) of the archive p describes.
func write(ctx context.Context, w io.Writer, p Plan, entries iter.Seq2[Entry, error], s largo.Store, from, to int64, opt Options) error {
	em := newEmitter(ctx, p.Format, w, s, from, to)
	lay, err := newLayout(em, p.Format, opt, p.cdStart)
	if err != nil {
		return err
	}
	defer lay.close()
	if err := walkWith(ctx, em, lay, entries); err != nil {
		return err
	}
	if err := em.settle(p.sum); err != nil {
		return err
	}
	if err := lay.end(); err != nil {
		return err
	}
	if p.Size >= 0 && em.pos != p.Size {
		return fmt.Errorf("archive of %d bytes, not the %d measured: %w", em.pos, p.Size, ErrChanged)
	}
	return nil
}

// layout lays out the pieces of one format's archive through an emitter:
// each entry's, then what follows them.
type layout interface {
	entry(e Entry) error
	end() error
	close()
}

// newLayout returns the layout of format, writing through em. cdStart is
// where a zip's central directory begins (-1 when measuring).
func newLayout(em *emitter, format Format, opt Options, cdStart int64) (layout, error) {
	switch format {
	case Tar, TarZst:
		return &tarLayout{em: em}, nil
	case Zip:
		return newZipLayout(em, opt, cdStart), nil
	}
	return nil, fmt.Errorf("unknown archive format %q", format)
}

// walkWith lays out every entry.
func walkWith(ctx context.Context, em *emitter, lay layout, entries iter.Seq2[Entry, error]) error {
	for e, err := range entries {
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = lay.entry(e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// zeroBlock is a source of zeros, for padding.
var zeroBlock = make([]byte, 64<<10)

// modTime is the time an entry records: whole seconds, in UTC, so that
// every format stores the same value and sizes never depend on precision.
func modTime(in largo.Info) time.Time {
	t := in.ModTime.UTC().Truncate(time.Second)
	if t.Before(time.Unix(0, 0)) {
		return time.Unix(0, 0).UTC()
	}
	return t
}

// tempDir is the folder of temporary files.
func tempDir(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}
