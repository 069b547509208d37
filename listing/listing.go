// Package listing gives back the entries of a folder in a chosen order in
// a bounded amount of memory, however many the folder holds: a million
// files are listed, sorted, in the same few megabytes as ten.
//
// A Sorter keeps each entry in a compact record (its name, size, time,
// ETag and flags, 27 bytes besides the name and the ETag) in an arena of
// fixed chunks, and an index of 16 bytes per entry: where its record is,
// and the first 8 bytes of its name, so that the orders by name (ByName,
// DirsFirst) compare most pairs without reading a record. The arena and
// the index are address space reserved once per listing and touched as
// they fill. A Sorter takes the memory it needs from a Budget shared by
// every listing at once, in steps, up to a per-listing maximum. When it
// can take no more, it sorts what it holds and writes it to a temporary
// file as a sorted run, and goes on with the same memory; the runs are
// merged on the way out, a few kilobytes of buffer per run (in several
// passes when there are too many to merge at once). Nothing is ever
// waited for: a listing that cannot get its first step of memory fails
// with ErrBusy, which a server answers 503 with a Retry-After.
//
// Why sort at all, rather than stream a huge folder unsorted or in pages:
// people and scripts expect a listing in order, complete, and the same
// from one request to the next; pages of an unsorted directory are not
// stable while it changes. External sorting keeps all three at the price
// of some temporary disk, about the size of the records, and is what
// sort(1) does for the same reason.
//
// The temporary file is removed from its folder as soon as it is created,
// so a crash leaves nothing behind. A Sorter is used by one goroutine.
//
// A walk of a tree (largo.WalkDir) in a deterministic order, which an
// archive and a SHA256SUMS need, walks the store Sorted returns: each
// folder listed by a Sorter, open while the folder's entries are walked.
package listing

import (
	"cmp"
	"encoding/binary"
	"errors"
	"time"
	"unsafe"

	"largo"
	"largo/limit"
)

// Config bounds the memory of listings. The zero value allows each
// listing DefaultMax, with no shared budget, spilling to os.TempDir().
type Config struct {
	// Budget is shared by every listing at once; nil caps nothing beyond
	// Max per listing.
	Budget *limit.Budget
	// Client are the keys of the client a listing is for (see
	// limit.Budget): what it takes counts against each key's share.
	Client []string
	// Max is the most memory one Sorter holds, in bytes; zero means
	// DefaultMax. A listing that needs more spills sorted runs to disk.
	Max int64
	// Dir is the folder of the temporary files; "" means os.TempDir().
	// It should be on a disk: a tmpfs holds its files in memory.
	Dir string
}

// DefaultMax is the default memory of one listing.
const DefaultMax = 4 << 20

// DefaultBudget is the memory all listings together hold by default
// (largo serve's --listing-budget), for a Config.Budget made where none
// is given.
const DefaultBudget = 32 << 20

// MinMax is the least memory a listing is given, whatever Config.Max
// says: the step it takes from the budget at a time.
const MinMax = step

// ErrBusy is the error of a listing that could not get the memory to
// start: too many large listings are running at once.
var ErrBusy = errors.New("listing: the memory for listings is all in use")

// Item is an entry as an order compares it. Its Name is only valid
// during the comparison: it points into the Sorter's memory.
type Item struct {
	Name    string
	Dir     bool
	Link    bool
	Size    int64
	ModTime time.Time
}

// An Order orders items: Compare returns a negative number when a comes
// before b, a positive one when it comes after, and zero when either may
// come first, as cmp.Compare does.
type Order interface {
	Compare(a, b *Item) int
}

// Compare is an Order given by a function, such as the order of a page's
// view.
type Compare func(a, b *Item) int

// Compare calls c.
func (c Compare) Compare(a, b *Item) int { return c(a, b) }

// NameOrder is an order by name byte by byte: ByName or DirsFirst. A
// Sorter compares these without decoding its entries, first by the
// leading bytes of the names it keeps beside each one, and only on a tie
// by the whole names: a listing of a large folder is sorted in a fraction
// of the time an Order given by a function takes.
type NameOrder uint8

const (
	// ByName orders by name, byte by byte, folders and files together:
	// the order of an archive.
	ByName NameOrder = iota
	// DirsFirst orders folders before files, each by name byte by byte:
	// the order of a JSON listing. Within the files it is ByName's order.
	DirsFirst
)

// Compare implements Order.
func (o NameOrder) Compare(a, b *Item) int {
	if o == DirsFirst && a.Dir != b.Dir {
		if a.Dir {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.Name, b.Name)
}

// A record is one entry, encoded:
//
//	flags  1 byte (1: folder, 2: link)
//	size   8 bytes
//	time   8 bytes of Unix seconds, 4 of nanoseconds
//	lens   2 bytes each: name, ETag, content type
//	then the name, the ETag and the content type.
const (
	hdrLen     = 1 + 8 + 8 + 4 + 3*2
	flagDir    = 1
	flagLink   = 2
	maxRecord  = chunkSize
	noTimeNsec = 1<<32 - 1 // marks the zero time.Time
)

// errTooLong is the error of an entry whose record would not fit a chunk:
// a name or an ETag of tens of kilobytes, which no store makes.
var errTooLong = errors.New("listing: entry too long")

func recordLen(in *largo.Info) int {
	return hdrLen + len(in.Name) + len(in.ETag) + len(in.ContentType)
}

// appendRecord appends in's record to b.
func appendRecord(b []byte, in *largo.Info) []byte {
	var flags byte
	if in.IsDir {
		flags |= flagDir
	}
	if in.Link {
		flags |= flagLink
	}
	sec, nsec := in.ModTime.Unix(), uint32(in.ModTime.Nanosecond())
	if in.ModTime.IsZero() {
		sec, nsec = 0, noTimeNsec
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(in.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(sec))
	b = binary.LittleEndian.AppendUint32(b, nsec)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(in.Name)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(in.ETag)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(in.ContentType)))
	b = append(b, in.Name...)
	b = append(b, in.ETag...)
	return append(b, in.ContentType...)
}

// lens returns the lengths of a record's strings, from its header.
func lens(hdr []byte) (name, etag, ctype int) {
	return int(binary.LittleEndian.Uint16(hdr[21:])), int(binary.LittleEndian.Uint16(hdr[23:])), int(binary.LittleEndian.Uint16(hdr[25:]))
}

// fullLen returns the length of the record whose header is hdr.
func fullLen(hdr []byte) int {
	n, e, c := lens(hdr)
	return hdrLen + n + e + c
}

func modTime(rec []byte) time.Time {
	sec, nsec := int64(binary.LittleEndian.Uint64(rec[9:])), binary.LittleEndian.Uint32(rec[17:])
	if nsec == noTimeNsec {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// recordName returns the name in rec, without copying it.
func recordName(rec []byte) string {
	n := int(binary.LittleEndian.Uint16(rec[21:]))
	if n == 0 {
		return ""
	}
	return unsafe.String(&rec[hdrLen], n)
}

// decodeItem points it at rec, without copying the name.
func decodeItem(rec []byte, it *Item) {
	it.Name = recordName(rec)
	it.Dir = rec[0]&flagDir != 0
	it.Link = rec[0]&flagLink != 0
	it.Size = int64(binary.LittleEndian.Uint64(rec[1:]))
	it.ModTime = modTime(rec)
}

// decodeInfo returns rec's entry, with strings of its own.
func decodeInfo(rec []byte) largo.Info {
	n, e, c := lens(rec)
	s := string(rec[hdrLen : hdrLen+n+e+c]) // one allocation for the three
	return largo.Info{
		Name:        s[:n],
		ETag:        s[n : n+e],
		ContentType: s[n+e:],
		IsDir:       rec[0]&flagDir != 0,
		Link:        rec[0]&flagLink != 0,
		Size:        int64(binary.LittleEndian.Uint64(rec[1:])),
		ModTime:     modTime(rec),
	}
}
