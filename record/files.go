package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"largo"
)

// File is what the server keeps of one file, in one record keyed by the
// file's name and written once, when the write that made the file
// commits: the version it describes, its digest, whose quota it counts
// against, the share link it came through and when it expires by it, and
// for a precompressed sidecar largo wrote, the version of the original
// it was made from. What it says of the file's bytes (SHA256, Source,
// Expires) holds only while the file has ETag: a file changed by other
// means (copied onto the disk, put into the bucket directly) has another
// ETag, and the record no longer speaks for it. Owner and Size say what
// the version counted for, which a replacement or a removal gives back.
type File struct {
	// Name is the file's name in the store.
	Name string `json:"name"`
	// ETag is the version the record describes.
	ETag string `json:"etag"`
	// Size is the version's length.
	Size int64 `json:"size"`
	// SHA256 is the version's digest, in hexadecimal; "" when not known.
	SHA256 string `json:"sha256,omitempty"`
	// CRC32 is the version's CRC-32 (IEEE), as eight hexadecimal digits;
	// "" when not known. A zip of its folder carries it, and knowing it
	// without reading the file is what lets a zip be sent from any offset
	// (package archive).
	CRC32 string `json:"crc32,omitempty"`
	// Owner is the user whose quota the version counts against; "" for
	// none (an anonymous writer, the server, a file largo did not write).
	Owner string `json:"owner,omitempty"`
	// Link is the share link the version came through, "" for none.
	Link string `json:"link,omitempty"`
	// Expires is when the version expires by its link's file TTL; zero
	// for never.
	Expires time.Time `json:"expires,omitzero"`
	// Source is, for a precompressed sidecar largo wrote, the ETag of the
	// version of the original it was made from.
	Source string `json:"source,omitempty"`
	// Sidecars are the extensions (".gz", ".br", ".zst") of the
	// sidecars largo wrote of this version: what follows it when it goes,
	// without a look at every name a sidecar could have.
	Sidecars []string `json:"sidecars,omitempty"`
	// Meta is what the writer said of the version and asked to be kept
	// with it (an S3 object's Content-Type, its other representation
	// headers and its x-amz-meta-* user metadata), keys in lower case;
	// the writer bounds it (package s3api: a few KiB).
	Meta map[string]string `json:"meta,omitempty"`
}

// Sum returns the record's digest as bytes, or nil when none is known (or
// the record is damaged).
func (f File) Sum() []byte {
	b, err := hex.DecodeString(f.SHA256)
	if err != nil || len(b) != sha256.Size {
		return nil
	}
	return b
}

// CRC returns the record's CRC-32; ok is false when none is known (or
// the record is damaged).
func (f File) CRC() (crc uint32, ok bool) {
	if len(f.CRC32) != 8 {
		return 0, false
	}
	n, err := strconv.ParseUint(f.CRC32, 16, 32)
	return uint32(n), err == nil
}

// FormatCRC writes a CRC-32 as File.CRC32 holds it.
func FormatCRC(crc uint32) string { return fmt.Sprintf("%08x", crc) }

// FilesPrefix is where the records of files are, in the state area.
const FilesPrefix = "files/"

// NameKey returns the key of the record of name in a table keyed by
// names: the SHA-256 of the name, so that the keys are a flat folder of
// fixed-length names, whatever the names (a file's name may also be a
// folder's).
func NameKey(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// FilesOptions tune Files; the zero value means the defaults.
type FilesOptions struct {
	// CacheSize bounds the records kept in memory; default 8192.
	CacheSize int
	// NegativeTTL is how long the absence of a record is believed;
	// default 5 s.
	NegativeTTL time.Duration
	// TTL is how long a record read is believed; default 5 s: another
	// instance (or largo digest, or largo precompress) may add to a
	// version's record meanwhile.
	TTL time.Duration
}

// Files is the table of the records of files: one per file, whatever
// knows something of it (the write pipeline, digests, quotas, expiry,
// sidecars). Make one with NewFiles; it is safe for concurrent use.
type Files struct {
	t      *Table[File]
	old    *oldLayout    // the records of an earlier release, until migrated
	negTTL time.Duration // how long a record of another version is believed
}

// NewFiles returns the records of files of s.
func NewFiles(s *Store, opt FilesOptions) *Files {
	if opt.CacheSize <= 0 {
		opt.CacheSize = 8192
	}
	if opt.NegativeTTL <= 0 {
		opt.NegativeTTL = 5 * time.Second
	}
	if opt.TTL <= 0 {
		opt.TTL = 5 * time.Second
	}
	f := &Files{t: NewTable[File](s, FilesPrefix, TableOptions(opt)), negTTL: opt.NegativeTTL}
	f.old = newOldLayout(s)
	return f
}

// Store returns the Store the records are in.
func (f *Files) Store() *Store { return f.t.s }

// checked returns rec if it is the record of name: a record of another
// name under its key is damaged.
func checked(name string, rec File, err error) (File, error) {
	if err != nil {
		return File{}, err
	}
	if rec.Name != name {
		return File{}, fmt.Errorf("record of %s: damaged (it is of %q): %w", name, rec.Name, largo.ErrNotFound)
	}
	return rec, nil
}

// Get returns the record of the file name, whatever version it
// describes, or an error wrapping largo.ErrNotFound. A record of an
// earlier release's layout not migrated yet is read (and migrated) on
// the way.
func (f *Files) Get(ctx context.Context, name string) (File, error) {
	rec, err := f.t.Get(ctx, NameKey(name))
	rec, err = checked(name, rec, err)
	if errors.Is(err, largo.ErrNotFound) && f.old.pending(ctx) {
		return f.old.migrateOne(ctx, f, name)
	}
	return rec, err
}

// Read returns the record of the file name as the state holds it now,
// whatever the cache knew: what a change that acts on the record's word
// reads (a removal that takes the sidecars it names along).
func (f *Files) Read(ctx context.Context, name string) (File, error) {
	f.Forget(name)
	return f.Get(ctx, name)
}

// Of returns the record of the file name if it describes the version
// etag, else an error wrapping largo.ErrNotFound.
func (f *Files) Of(ctx context.Context, name, etag string) (File, error) {
	rec, err := f.Get(ctx, name)
	if err == nil && rec.ETag != etag && etag != "" {
		// The file changed since its record was read: another instance,
		// or largo digest, may have recorded the new version since.
		rec, err = f.t.Recent(ctx, NameKey(name), f.negTTL)
		rec, err = checked(name, rec, err)
	}
	if err != nil {
		return rec, err
	}
	if etag == "" || rec.ETag != etag {
		return File{}, fmt.Errorf("record of %s: of another version: %w", name, largo.ErrNotFound)
	}
	return rec, nil
}

// Peek is Get for a walk through many files: it reads without keeping
// the answer.
func (f *Files) Peek(ctx context.Context, name string) (File, error) {
	rec, err := f.t.Peek(ctx, NameKey(name))
	rec, err = checked(name, rec, err)
	if errors.Is(err, largo.ErrNotFound) && f.old.pending(ctx) {
		return f.old.migrateOne(ctx, f, name)
	}
	return rec, err
}

// Put writes rec, the record of rec.Name, replacing any.
func (f *Files) Put(ctx context.Context, rec File) error {
	if rec.Name == "" || rec.ETag == "" {
		return fmt.Errorf("record of %q: no name or no version", rec.Name)
	}
	return f.t.Put(ctx, NameKey(rec.Name), rec)
}

// Update changes the record of the file name by fn, only as it was read
// (Table.Update); fn is given the zero File, with its Name set, when
// there is none.
func (f *Files) Update(ctx context.Context, name string, fn func(rec *File, exists bool) (Change, error)) (File, error) {
	if f.old.pending(ctx) {
		f.Get(ctx, name) // an earlier release's records first
	}
	return f.t.Update(ctx, NameKey(name), func(rec *File, exists bool) (Change, error) {
		if exists && rec.Name != name {
			*rec, exists = File{}, false // damaged: as if none
		}
		rec.Name = name
		return fn(rec, exists)
	})
}

// Delete removes the record of the file name; a missing one is no
// error.
func (f *Files) Delete(ctx context.Context, name string) error {
	if f.old.pending(ctx) {
		f.old.drop(ctx, name)
	}
	return f.t.Delete(ctx, NameKey(name))
}

// Move puts the record of from under to, where a rename or a move by
// copies put the file, as the version in: kept when the file kept its
// version (a rename keeps a file's bytes, and on a folder its ETag),
// else only what holds of any version (its owner, what it counted),
// which the quotas give back when it goes. The record of from goes.
func (f *Files) Move(ctx context.Context, from, to string, in largo.Info) error {
	rec, err := f.Get(ctx, from)
	if errors.Is(err, largo.ErrNotFound) {
		return f.Delete(ctx, to) // an older file's record there goes
	}
	if err != nil {
		return err
	}
	rec.Name = to
	if rec.ETag != in.ETag {
		rec = File{Name: to, ETag: in.ETag, Size: in.Size, Owner: rec.Owner}
	}
	if err := f.Put(ctx, rec); err != nil {
		return err
	}
	return f.Delete(ctx, from)
}

// Forget drops what the cache knows of name.
func (f *Files) Forget(name string) { f.t.Forget(NameKey(name)) }

// All yields every record of a file, in no particular order; a damaged
// one as an error that does not end the walk.
func (f *Files) All(ctx context.Context) iter.Seq2[File, error] {
	return func(yield func(File, error) bool) {
		for e, err := range f.t.All(ctx) {
			if err == nil && NameKey(e.Value.Name) != e.Key {
				err = fmt.Errorf("record %s%s: damaged", FilesPrefix, e.Key)
			}
			if !yield(e.Value, err) {
				return
			}
		}
	}
}

// Sweep removes the records for which orphan reports true (their file is
// gone, or is another version now), each only as it was read, and
// returns how many it removed: the one sweep of the records of files. A
// damaged record goes too.
func (f *Files) Sweep(ctx context.Context, orphan func(ctx context.Context, rec File) bool) (int, error) {
	return f.t.Sweep(ctx, func(ctx context.Context, e Entry[File]) bool {
		return NameKey(e.Value.Name) != e.Key || orphan(ctx, e.Value)
	})
}
