// Package digests keeps the SHA-256 of each file beside the version it
// belongs to, so that a file can be checked long after it landed without
// being read: downloads answer it as Repr-Digest (RFC 9530), folders as
// SHA256SUMS, and nothing is ever hashed on a request's path.
//
// The write pipeline (package ingest) computes every file's SHA-256 as its
// bytes arrive and writes it, at commit, into the file's record
// (record.File, package record: one record per file, in the store's
// state area) with the ETag of the version just committed. A record
// answers only for that ETag: a file changed by any other means (copied
// onto the disk, put into the bucket directly, rewritten in place) has
// another ETag, and its old digest is never served again. Such files are
// hashed by Hash (largo digest, and the server's optional background
// pass, Scan), at a capped rate, which adds the digest to their record.
// A removal drops the record, a move carries it (the pipeline).
//
// A Keeper reads through the records' bounded cache: a download of a
// small file does not pay a state read (on a bucket, a GET) each time,
// and concurrent misses of one name share one read.
package digests

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"

	"largo"
	"largo/record"
)

// Options tune a Keeper; the zero value means the defaults.
type Options struct {
	// Store is the store the records describe, unguarded: the server's
	// own view, which Hash and Scan walk and read.
	Store largo.Store
	// Logger receives the failures of recording; nil discards them.
	Logger *slog.Logger
}

// Keeper answers and records the digests of one store. It is safe for
// concurrent use. Make one with New; a nil *Keeper records and knows
// nothing.
type Keeper struct {
	files *record.Files // nil: nothing is recorded
	store largo.Store
	log   *slog.Logger
}

// New returns a Keeper of the digests in files; a nil files (a store
// without a state area) records nothing and knows no digest.
func New(files *record.Files, opt Options) *Keeper {
	k := &Keeper{files: files, store: opt.Store, log: opt.Logger}
	if k.log == nil {
		k.log = slog.New(slog.DiscardHandler)
	}
	return k
}

// Lookup returns the SHA-256 recorded for the version etag of the file
// name, or nil when none is. A record that cannot be read counts as
// none, and the error is returned for the log.
func (k *Keeper) Lookup(ctx context.Context, name, etag string) ([]byte, error) {
	if k == nil || k.files == nil || etag == "" {
		return nil, nil
	}
	rec, err := k.files.Of(ctx, name, etag)
	if errors.Is(err, largo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rec.Sum(), nil
}

// Peek is Lookup for a walk through many files (a listing, SHA256SUMS):
// it answers from the cache when it can, and otherwise reads the record
// without keeping the answer, so that a walk does not push the answers
// of downloads out of the cache.
func (k *Keeper) Peek(ctx context.Context, name, etag string) ([]byte, error) {
	if k == nil || k.files == nil || etag == "" {
		return nil, nil
	}
	rec, err := k.peekRecord(ctx, name, etag)
	return rec.Sum(), err
}

// peekRecord is the record of the version etag of name, as Peek reads it:
// the zero File when there is none.
func (k *Keeper) peekRecord(ctx context.Context, name, etag string) (record.File, error) {
	rec, err := k.files.Peek(ctx, name)
	if errors.Is(err, largo.ErrNotFound) || err == nil && rec.ETag != etag {
		return record.File{}, nil
	}
	if err != nil {
		return record.File{}, err
	}
	return rec, nil
}

// CRC32 returns the CRC-32 recorded for the version etag of the file
// name; ok is false when none is: an archive.CRC32Func, with which a zip
// of files that all have theirs may be sent from any offset.
func (k *Keeper) CRC32(ctx context.Context, name, etag string) (crc uint32, ok bool) {
	if k == nil || k.files == nil || etag == "" {
		return 0, false
	}
	rec, err := k.files.Of(ctx, name, etag)
	if err != nil {
		return 0, false
	}
	return rec.CRC()
}

// record keeps sum and crc as the SHA-256 and the CRC-32 of the version
// in of the file name, in its record: the record of another version is
// replaced by one of this version that keeps only its owner (what the
// quotas counted).
func (k *Keeper) record(ctx context.Context, name string, in largo.Info, sum []byte, crc uint32) error {
	_, err := k.files.Update(ctx, name, func(rec *record.File, exists bool) (record.Change, error) {
		if !exists || rec.ETag != in.ETag {
			*rec = record.File{Name: name, ETag: in.ETag, Size: in.Size, Owner: rec.Owner}
		}
		rec.SHA256 = hex.EncodeToString(sum)
		rec.CRC32 = record.FormatCRC(crc)
		return record.Write, nil
	})
	return err
}
