// Package sidecar tells the precompressed sidecars largo wrote from the
// files users put beside their originals. A data.csv.gz next to data.csv
// may be data.csv compressed, or a file of its own that a user uploaded;
// its name cannot say which, and taking a user's file for another file's
// encoding sends gzip clients the wrong content and hides the file from
// listings. So every sidecar largo precompress writes has it said in its
// record (record.File, package record: one record per file, in the
// store's state area): the version of the original it was made from
// (Source), beside its own version (ETag); and the original's record
// names the sidecars written of it (Sidecars). The server takes NAME.gz
// for NAME's encoding only while both versions still match (and for
// largo's own, hidden from listings, while the first does). Anything
// else with a sidecar's name is a file like any other.
//
// Checker answers whether a file is a recorded sidecar (Of: largo's own,
// to hide from listings and remove with its original) and whether it is
// fresh (Recorded: made from the original as it is now, to send as its
// encoding), through the records' bounded cache, so that a download does
// not read a record every time.
//
// Policy (policy.go) is the one definition of which files stand for
// another as its encoding, under --sidecars recorded (the records) or any
// (any regular file not older than its original, as nginx's
// gzip_static), and of which sidecars listings hide (Shows, Hides):
// serving, listings and archives (package serve), the page's searches
// and selections (package pageapi) and the Follower share it.
//
// Follower (follow.go) keeps sidecars following their file through every
// change the write pipeline makes or is told of (ingest.Derived): a file
// removed, expired, moved or replaced takes along the sidecars that stood
// for it, records and all, and nothing written before a version is sent
// as its encoding. It reaches package gate only for the server's own
// principal, under which the pipeline removes them.
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"largo"
	"largo/encode"
	"largo/record"
)

// Record is what is kept of a sidecar largo wrote.
type Record struct {
	// Name is the sidecar's name in the store.
	Name string
	// ETag is the sidecar's ETag as written.
	ETag string
	// Source is the ETag of the version of the original it was made from.
	Source string
}

// Checker answers whether files are sidecars largo wrote, from their
// records. It is safe for concurrent use. Make one with NewChecker; a nil
// *Checker knows of no sidecar.
type Checker struct {
	files *record.Files // nil: nothing is recorded
}

// NewChecker returns a Checker over the records of files; a nil files (a
// store without a state area) has no records, so no file is taken for a
// sidecar.
func NewChecker(files *record.Files) *Checker { return &Checker{files: files} }

// Files returns the records the Checker reads, nil for none.
func (c *Checker) Files() *record.Files {
	if c == nil {
		return nil
	}
	return c.files
}

// Recorded reports whether the file name, described by sin, is a sidecar
// largo wrote from the original whose ETag is now source, and unchanged
// since: one to send as the original's encoding. A record that cannot be
// read counts as none, and the error is returned for the log
// (largo.ErrNotFound is no error).
func (c *Checker) Recorded(ctx context.Context, name string, sin largo.Info, source string) (bool, error) {
	rec, ours, err := c.Of(ctx, name, sin)
	return ours && source != "" && rec.Source == source, err
}

// Of returns the record of the file name, described by sin, and true when
// it is a sidecar largo wrote, unchanged since (its ETag is the recorded
// one), whether or not its original changed since. Errors are as for
// Recorded.
func (c *Checker) Of(ctx context.Context, name string, sin largo.Info) (Record, bool, error) {
	if c == nil || c.files == nil || sin.IsDir || sin.ETag == "" {
		return Record{}, false, nil
	}
	rec, err := c.files.Of(ctx, name, sin.ETag)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return Record{}, false, nil
	case err != nil:
		return Record{}, false, err
	case rec.Source == "":
		return Record{}, false, nil // a file of its own
	}
	return Record{Name: name, ETag: rec.ETag, Source: rec.Source}, true, nil
}

// Put records in files that the sidecar name, as sin describes it after
// its commit, was made from the version source of its original, and names
// it in the original's record when that record is of source: what
// largo precompress writes (through the write pipeline, with the write's
// ingest.Target.Source), for tools and tests that make a sidecar another
// way.
func Put(ctx context.Context, files *record.Files, name string, sin largo.Info, source string) error {
	if sin.ETag == "" || source == "" {
		return fmt.Errorf("sidecar %s: no ETag to record", name)
	}
	_, err := files.Update(ctx, name, func(rec *record.File, exists bool) (record.Change, error) {
		if !exists || rec.ETag != sin.ETag {
			*rec = record.File{Name: name, ETag: sin.ETag, Size: sin.Size, Owner: rec.Owner}
		}
		rec.Source = source
		return record.Write, nil
	})
	if err != nil {
		return err
	}
	base, c, ok := encode.SidecarBase(name)
	if !ok {
		return nil
	}
	_, err = files.Update(ctx, base, func(rec *record.File, exists bool) (record.Change, error) {
		if !exists || rec.ETag != source || slices.Contains(rec.Sidecars, c.Ext()) {
			return record.Keep, nil
		}
		rec.Sidecars = append(rec.Sidecars, c.Ext())
		return record.Write, nil
	})
	return err
}
