package ingest

import (
	"context"

	"largo"
	"largo/record"
)

// Quota holds writes to the quotas of who writes and where (package
// quota): a write that would take a quota past its limit is refused
// before a byte of it is read, with an error wrapping largo.ErrNoSpace
// (a *largo.QuotaError, answered 507 with the quota named), and the size
// it announces is held against the quotas while it is in flight, so that
// writes admitted together cannot together overrun one.
// Implementations must be safe for concurrent use.
type Quota interface {
	// Admit admits a write of size bytes (-1: not known yet) to name,
	// for the principal ctx carries; was, when not nil, is what the
	// pipeline found at name a moment before (the zero Info: nothing),
	// which it need not look at again. With hold the size is held until
	// the claim is committed or released; without, the claim only
	// answers the question and must be released.
	Admit(ctx context.Context, name string, size int64, hold bool, was *largo.Info) (Claim, error)
	// AdmitBytes admits the bytes of a resumable upload to name, for the
	// principal ctx carries, as they are staged: a claim that holds
	// nothing yet and counts no file (the upload's file is admitted at
	// its creation and when it is placed), which Grow holds byte by
	// byte, or refuses. It is refused now only when a quota has no room
	// left at all. Its bytes are held until it is released: it is never
	// committed.
	AdmitBytes(ctx context.Context, name string) (Claim, error)
	// Forget is told that name (a file, or a folder with all below it)
	// was removed.
	Forget(ctx context.Context, name string)
	// Renamed is told that the store renamed from to to.
	Renamed(ctx context.Context, from, to string)
	// KeepBeside counts size bytes kept beside the file or folder name
	// (WebDAV's dead properties) for the principal ctx carries and for
	// the paths of name, in place of what counted beside it before: it
	// refuses, with an error wrapping largo.ErrNoSpace, what that adds to
	// a quota with no room for it. What is kept beside a name follows it
	// (Renamed, Carried) and goes with it (Forget).
	KeepBeside(ctx context.Context, name string, size int64) error
	// FolderMade counts the folder name, just made for the principal ctx
	// carries (admitted by Admit as a file of no bytes), as one file for
	// them and its paths, while it is there.
	FolderMade(ctx context.Context, name string)
	// Carried is told that a move by copies put the file or folder from
	// at to: what counted beside it follows it.
	Carried(ctx context.Context, from, to string)
	// AdmitMove refuses a rename of from (a file, or a folder with all
	// below it) to to that would take a quota past its limit: that of a
	// path at or below to where the move lands files that were not under
	// it before.
	AdmitMove(ctx context.Context, from, to string) error
}

// Claim is a write's hold on the quotas. A Claim is used by the
// goroutine of its write.
type Claim interface {
	// Grow counts n more bytes received; past the size held, they are
	// held too, or refused when a quota has no room for them (a body of
	// unknown length is bounded so).
	Grow(n int64) error
	// Commit counts the file committed, in, against the quotas, and
	// ends the hold; created reports that no file was there before. It
	// names the owner in the file's record, rec, which the pipeline
	// writes next.
	Commit(ctx context.Context, in largo.Info, created bool, rec *record.File)
	// Release ends the hold of a write that did not commit. It is safe
	// to call after Commit, when it does nothing.
	Release()
}

// claim asks the quotas about a write, when there are any.
func (p *Pipeline) claim(ctx context.Context, name string, size int64, hold bool, was *largo.Info) (Claim, error) {
	if p.cfg.Quota == nil {
		return nil, nil
	}
	return p.cfg.Quota.Admit(ctx, name, size, hold, was)
}

// CheckMove refuses, with an error wrapping largo.ErrNoSpace, a rename
// of from (a file, or a folder with all below it) to to that would take
// the quota of a path past its limit: a path that holds to, or one below
// to, under which the move lands what lies at the same place below from.
// The front ends ask it before a move by copies (MoveByCopy) too, so
// that such a move is refused whole rather than halfway; each of its
// copies is then admitted as a write.
func (p *Pipeline) CheckMove(ctx context.Context, from, to string) error {
	if p.cfg.Quota == nil {
		return nil
	}
	return p.cfg.Quota.AdmitMove(ctx, from, to)
}

// checkQuota refuses a write the quotas have no room for, holding
// nothing.
func (p *Pipeline) checkQuota(ctx context.Context, name string, size int64) error {
	c, err := p.claim(ctx, name, size, false, nil)
	if c != nil {
		c.Release()
	}
	return err
}

// KeepBeside admits and counts the size bytes kept beside name (WebDAV's
// dead properties) for ctx's principal, in place of what was kept
// before: refused, with an error wrapping largo.ErrNoSpace, when a quota
// has no room for what that adds.
func (p *Pipeline) KeepBeside(ctx context.Context, name string, size int64) error {
	if p.cfg.Quota == nil {
		return nil
	}
	return p.cfg.Quota.KeepBeside(ctx, name, size)
}

// CheckFolder refuses, with an error wrapping largo.ErrNoSpace, a new
// folder name that a files quota of ctx's principal or of a path has no
// room for: a folder made counts as one file (FolderMade).
func (p *Pipeline) CheckFolder(ctx context.Context, name string) error {
	return p.checkQuota(ctx, name, 0)
}

// FolderMade tells the pipeline that the folder name was just made for
// ctx's principal (a WebDAV MKCOL, the page's new folder), to count it.
func (p *Pipeline) FolderMade(ctx context.Context, name string) {
	if p.cfg.Quota != nil {
		p.cfg.Quota.FolderMade(ctx, name)
	}
}
