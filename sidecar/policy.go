package sidecar

import (
	"context"
	"log/slog"
	"strings"

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

// Shows returns the test of which entries of the folder dir listings and
// archives show: it hides the sidecars of the folder, NAME.zst, NAME.br
// or NAME.gz, when NAME is a file in the same folder whose sidecars are
// sent (Offered) and the file is one of largo's (Own). A lone
// backup.tar.gz, one beside a folder named backup.tar, and a data.csv.gz
// someone put beside data.csv stay. A file whose type is only known from
// its first bytes (no extension) may be text, so its sidecars are hidden
// too. A record that cannot be read counts as none; its error goes to
// log (nil: nowhere).
//
// The test is given the folder's entries with the files in name order
// (byte by byte; folders anywhere among them), as listings and archives
// come out of their sort. Every name between NAME and NAME.gz in that
// order begins with NAME, so the test only keeps the chain of files seen
// whose names begin the current one: its memory is bounded by the length
// of a name, not by the size of the folder.
func (p *Policy) Shows(ctx context.Context, dir string, log *slog.Logger) func(largo.Info) bool {
	var chain []largo.Info
	return func(in largo.Info) bool {
		if in.IsDir {
			return true
		}
		for len(chain) > 0 && !strings.HasPrefix(in.Name, chain[len(chain)-1].Name) {
			chain = chain[:len(chain)-1]
		}
		show := true
		if base, _, ok := encode.SidecarBase(in.Name); ok {
			for _, orig := range chain {
				if orig.Name == base && p.Offered(orig) && p.own(ctx, largo.Join(dir, in.Name), in, orig, log) {
					show = false
				}
			}
		}
		chain = append(chain, in)
		return show
	}
}

// Hides reports whether the file in, an entry of the folder dir, is a
// sidecar that listings hide (see Shows), looking its original up by
// name in store: for a walk that meets entries in no order.
func (p *Policy) Hides(ctx context.Context, store largo.Store, dir string, in largo.Info, log *slog.Logger) bool {
	base, _, ok := encode.SidecarBase(in.Name)
	if !ok || in.IsDir {
		return false
	}
	orig, err := store.Stat(ctx, largo.Join(dir, base))
	return err == nil && p.Offered(orig) && p.own(ctx, largo.Join(dir, in.Name), in, orig, log)
}

// own is Own, with a record that cannot be read counted as none and its
// error logged.
func (p *Policy) own(ctx context.Context, side string, sin, orig largo.Info, log *slog.Logger) bool {
	ok, err := p.Own(ctx, side, sin, orig)
	if err != nil && log != nil {
		log.Warn("reading a sidecar's record", "name", side, "err", err)
	}
	return ok
}
