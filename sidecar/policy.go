package sidecar

import (
	"context"

	"largo"
	"largo/encode"
)

// Policy says which files stand for another as its encoding: the one
// definition that serving, listings, archives and the files that follow
// their file (Follower) share. It is safe for concurrent use; make one
// with NewPolicy.
type Policy struct {
	any     bool
	records *Checker
	media   func(largo.Info) string
}

// NewPolicy returns the policy that takes for a file's sidecars those
// records recorded (records; nil: none), or with any every regular file
// under a sidecar's name not older than the file (--sidecars any, as
// nginx's gzip_static). mediaType is the media type a file is served
// with, "" when only its first bytes tell; nil means none is known.
func NewPolicy(records *Checker, any bool, mediaType func(largo.Info) string) *Policy {
	if mediaType == nil {
		mediaType = func(largo.Info) string { return "" }
	}
	return &Policy{any: any, records: records, media: mediaType}
}

// Any reports whether any fresh file is taken for a sidecar.
func (p *Policy) Any() bool { return p.any }

// Records returns the checker of the records, nil for none.
func (p *Policy) Records() *Checker { return p.records }

// Offered reports whether orig is a file whose sidecars are sent at all:
// of encode.MinSize or more, of a type the compression policy compresses
// or that only its first bytes tell (they may be text).
func (p *Policy) Offered(orig largo.Info) bool {
	return !orig.IsDir && orig.Size >= encode.MinSize && p.compressible(orig)
}

// compressible reports whether orig's type may be compressed, whatever
// its size.
func (p *Policy) compressible(orig largo.Info) bool {
	ct := p.media(orig)
	return ct == "" || encode.Compressible(ct)
}

// Serves reports whether the file side, described by sin, stands for the
// file orig as its encoding now: recorded from orig as it is now and
// unchanged since, or with Any a regular file no older than orig. A
// record that cannot be read counts as none; its error is returned for
// the log.
func (p *Policy) Serves(ctx context.Context, side string, sin, orig largo.Info) (bool, error) {
	if sin.IsDir {
		return false, nil
	}
	if p.any {
		return !sin.ModTime.Before(orig.ModTime), nil
	}
	return p.records.Recorded(ctx, side, sin, orig.ETag)
}

// Own reports whether the file side, described by sin, is one of
// largo's sidecars of orig, hidden from listings and archives: recorded
// and unchanged since, even when orig changed since (a stale sidecar is
// still no file of anyone's), or with Any one Serves takes.
func (p *Policy) Own(ctx context.Context, side string, sin, orig largo.Info) (bool, error) {
	if p.any {
		return p.Serves(ctx, side, sin, orig)
	}
	_, ours, err := p.records.Of(ctx, side, sin)
	return ours, err
}
