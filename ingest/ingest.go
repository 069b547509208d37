// Package ingest is largo's one write pipeline. Every write the server
// accepts, whatever protocol carried it (a PUT, a form's file, a finished
// tus upload, a precompressed sidecar, and every protocol to come), passes
// through a Pipeline, so that each rule of writing is written once:
//
//   - admission (Check, Begin): the name policy (CheckName), whether the
//     store writes at all and applies conditions, the condition checked
//     against the current target before any byte is read, the target's
//     folder (409 when it is a file, or missing under NoMkdir), the size
//     limit (413) and the free space less the reserve (507), with the
//     announced sizes of the writes in flight held as reservations, so
//     that writes admitted together cannot together eat into the reserve;
//     a reservation lasts while its body makes progress (StallAfter), so
//     that a client who announces a large body and trickles it cannot keep
//     the space from everyone else;
//   - the chunks of a resumable upload (Hold, Held.Chunk: held.go), each
//     admitted as it arrives against the size limit, the reserve and the
//     quotas, which hold what the upload staged until it is placed;
//   - receiving (Write.ReadFrom): whole buffers from a pool, each hashed
//     with SHA-256 on a second core while the store takes it (package
//     internal/spool), bounded by the limit and the room admitted;
//   - the digest check and the commit (Write.Commit), atomic under the
//     condition, or the abort: a refused or broken write leaves the
//     target as it was, and nothing of it in the store;
//   - placing the bytes of a finished resumable upload (Place): adopted
//     where they are staged when the store can (largo.Adopter), completed
//     where they were assembled (largo.AssemblyAdopter: a parallel
//     upload's pieces on a bucket), copied through the same receiving
//     otherwise;
//   - locks (Config.Guard): a name another client has locked (WebDAV's
//     LOCK) refuses every write and removal, whatever protocol carries
//     it, unless the request presents the lock's token (423 otherwise);
//   - quotas (Config.Quota): a write that would take a quota of its user
//     or of a path past its limit is refused before its body (507, the
//     quota named), its size held against the quotas while in flight, a
//     rename into a path admitted by CheckMove;
//   - the record of each file (Config.Files, package record): written
//     once at commit with the version's SHA-256 (whatever protocol
//     carried it; a copy made by the store carries its source's), its
//     owner (the quotas'), the link it came through and when it expires
//     (Config.Landed), what the client asked to keep with it
//     (Target.Meta: an S3 object's metadata) and, for a sidecar, its
//     source; a rename (Renamed)
//     or a move by copies carries the moved files' records, a removal
//     (Forget) drops the file's;
//   - derived files (Config.Derived, derived.go): every change to a file
//     (a commit, a removal, an expiry, a move) is told to Derived, which
//     names the files derived from it that the change leaves behind (its
//     precompressed sidecars, package sidecar), and the pipeline removes
//     them as the server, under If-Match of what was judged; a file the
//     store takes back once committed (the gate's: a drop box's NAME.gz
//     beside a NAME that came meanwhile) fails its write;
//   - hooks (Config.Hooks, hooks.go): the pre-upload hook, asked of an
//     upload once the pipeline admits it (Begin, BeginCopy, and Accept at
//     a resumable upload's creation, never again at Place), and every
//     change told (a commit, a removal, a move, an expiry);
//   - changes told (Config.Changes): every commit, removal and move, as
//     it is made and before it is answered, so that what keeps files for
//     reads (package filecache) serves the change at once;
//   - one table from error to HTTP status and reason (Status), which every
//     front end uses: package serve answers with it, package resumable
//     turns it into tus errors.
//
// A store offers only what cannot be shared: largo.Creator (create, then
// commit or abort) and optionally largo.Adopter, largo.Remover and
// largo.SpaceReporter. Counting, hashing and checking are the pipeline's.
//
// A Pipeline is safe for concurrent use; a Write is used by one goroutine.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"sync"
	"time"

	"largo"
	"largo/record"
)

// Observer receives the events that upload metrics are made of.
// Implementations must be safe for concurrent use.
type Observer interface {
	// PendingBytes moves the count of bytes held by writes in flight.
	PendingBytes(delta int64)
}

// Guard is what a protocol keeps beside files that writes must respect:
// WebDAV's locks and dead properties (package dav). Implementations must
// be safe for concurrent use.
type Guard interface {
	// Locked returns an error wrapping largo.ErrLocked when name is locked by a
	// lock whose token is not among tokens; with tree, locks on anything
	// below name count too (the removal of a folder).
	Locked(ctx context.Context, name string, tree bool, tokens []string) error
	// Forget is told that name (and, for a folder, all below it) is gone,
	// so that what was kept about it goes too.
	Forget(ctx context.Context, name string)
	// Renamed is told that from (and, for a folder, all below it) is at
	// to now, renamed or moved by copies, so that what was kept about it
	// follows it.
	Renamed(ctx context.Context, from, to string)
}

// Lander is told of each file a write committed, with the context of
// the write (its principal: package expiry keeps the expiry of a file
// that lands through a drop box whose files expire), and the file's
// record (record.File) to fill in before the pipeline writes it. A
// failure to act fails no write: the implementation logs it.
// Implementations must be safe for concurrent use.
type Lander interface {
	Landed(ctx context.Context, name string, in largo.Info, rec *record.File)
}

// Changes is told of each change the pipeline makes to the files of its
// store, before the write, removal or move that made it is answered: a
// file committed (written, copied, placed), a file or folder removed
// (by a client, as expired, as a derived file left behind), and both
// names of a move. name is the name as the request spelled it; a folder
// stands for everything below it. What keeps files' bytes or metadata
// for reads (package filecache) forgets them here, so that a change made
// through the server is served at once. Implementations must be safe
// for concurrent use, and quick: they run on the request's path.
type Changes interface {
	Changed(name string)
}

// Config configures a Pipeline. Only Store is required; the zero value of
// every other field means no limit.
type Config struct {
	// Store receives the writes. A store that does not implement
	// largo.Creator refuses them all (ErrUnsupported, 501).
	Store largo.Store
	// MaxSize is the largest file a write may store, in bytes; zero means
	// no limit.
	MaxSize int64
	// Reserve is the free space, in bytes, that writes must leave on a
	// store that reports its free space (largo.SpaceReporter).
	Reserve int64
	// NoMkdir refuses writes into folders that do not exist instead of
	// creating them.
	NoMkdir bool
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// Guard refuses writes to locked names and forgets removed ones; nil
	// means no locks.
	Guard Guard
	// Files keeps the one record of each file (package record): written
	// once when a write commits (its digest, its owner, the link it came
	// through and when it expires by it, a sidecar's source), dropped
	// when the file goes, moved when it moves; nil keeps none.
	Files *record.Files
	// Server returns the context of the server's own calls to Store
	// (package gate: the server's principal), for the walk of a folder
	// renamed, whose files' records move with it; nil uses the request's.
	Server func(context.Context) context.Context
	// Landed is told of each committed file; nil tells no one.
	Landed Lander
	// Quota holds writes to quotas of users and paths; nil means none.
	Quota Quota
	// Hooks asks the pre-upload hook and is told of every change made;
	// nil asks and tells no one.
	Hooks Hooks
	// Derived names the files derived from each file (its precompressed
	// sidecars), which the pipeline removes when a change leaves them
	// behind (derived.go); nil: none.
	Derived Derived
	// Changes is told of every change made; nil tells no one.
	Changes Changes
	// Now is the clock of the promises of space; nil means time.Now.
	Now func() time.Time
	// Logger receives the failures that fail no write (a record not
	// kept); nil discards them.
	Logger *slog.Logger
}

// Pipeline admits, receives and commits writes into one store.
type Pipeline struct {
	cfg   Config
	cr    largo.Creator // nil: the store takes no writes
	space largo.SpaceReporter
	obs   Observer

	mu    sync.Mutex
	holds map[*hold]struct{} // the space promised to the writes in flight
}

// A write's promise of space lasts while its body makes progress: a
// client that announces a large body and then trickles it (a byte now
// and then) must not keep the space from everyone else for as long as it
// likes. A promise whose write has not received progressQuantum bytes in
// StallAfter is given back; the write goes on without one, bounded by the
// room it was admitted with and by the real free space.
const (
	// StallAfter is how long a write may go without progressQuantum
	// bytes before its promise of space is given back.
	StallAfter      = 30 * time.Second
	progressQuantum = 64 << 10
)

// hold is the space promised to one write in flight.
type hold struct {
	left     int64     // bytes still promised
	progress time.Time // when the write last received progressQuantum
	since    int64     // bytes received since
	dropped  bool      // given back
}

// New returns the Pipeline of cfg.
func New(cfg Config) *Pipeline {
	p := &Pipeline{cfg: cfg, obs: cfg.Observer, holds: map[*hold]struct{}{}}
	if p.cfg.Now == nil {
		p.cfg.Now = time.Now
	}
	if p.cfg.Logger == nil {
		p.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p.cr, _ = cfg.Store.(largo.Creator)
	p.space, _ = cfg.Store.(largo.SpaceReporter)
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	return p
}

// Store returns the store the pipeline writes to.
func (p *Pipeline) Store() largo.Store { return p.cfg.Store }

// Files returns the records of files the pipeline keeps, nil for none.
func (p *Pipeline) Files() *record.Files { return p.cfg.Files }

// MaxSize returns the size limit, zero for none.
func (p *Pipeline) MaxSize() int64 { return p.cfg.MaxSize }

// Target is what a write asks for.
type Target struct {
	// Name is the file to write, as returned by largo.ParseName.
	Name string
	// Size is the number of bytes still to come, or -1 when it is not
	// known (a chunked body, a form's file).
	Size int64
	// Cond must hold of the target when the write commits; it is also
	// checked at admission, before any byte is read.
	Cond largo.Condition
	// SHA256, when not nil, is what the bytes must hash to (the client's
	// digest); a write whose bytes differ is refused with ErrDigest.
	SHA256 []byte
	// Tokens are the lock tokens the request presents (LockTokens): a
	// write to a locked name passes only with the lock's token.
	Tokens []string
	// Protocol names the front end that carries the write (put, form,
	// tus, ietf, webdav, precompress), for the hooks.
	Protocol string
	// Metadata is what the client said of the file, for the pre-upload
	// hook (Upload.Metadata).
	Metadata map[string]string
	// Hooked is what the pre-upload hook answered (Accept), carried to
	// the committed event.
	Hooked map[string]string
	// Source is, for a precompressed sidecar largo writes (package
	// precompress), the ETag of the version of the original it is made
	// from: kept in the sidecar's record (record.File.Source).
	Source string
	// Meta is what the client said of the file and asked to be kept
	// with it (an S3 object's metadata): kept in the file's record
	// (record.File.Meta).
	Meta map[string]string
	// moving marks the copy of a move by copies: no upload of its own.
	moving bool
	// looked is set when admission looked at Name (was is then what it
	// found), so that what comes after need not look again.
	looked bool
	// was is the version admission found at Name, zero for none: what
	// is derived from it does not stand for the new one (Derived).
	was largo.Info
}

// CheckName applies the write policy to a name that passed
// largo.ParseName: the root, hidden names and names under the reserved
// prefix are never written (ErrIsDir, largo.ErrReservedName), and a new name
// must pass largo.CheckNew (UTF-8, nothing that makes it pass for
// another: ErrInvalidName, largo.ErrUnsafeName).
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the root: %w", largo.ErrIsDir)
	case largo.Reserved(name):
		return fmt.Errorf("%s: %w: %w", name, largo.ErrReservedName, largo.ErrPermission)
	}
	return largo.CheckNew(name)
}

// Check admits a write without starting it: everything Begin checks, and
// no space is held. A resumable upload is checked so at its creation.
func (p *Pipeline) Check(ctx context.Context, t Target) error {
	if err := p.admit(ctx, &t); err != nil {
		return err
	}
	if _, _, err := p.room(ctx, t.Name, t.Size, false); err != nil {
		return err
	}
	return p.checkQuota(ctx, t.Name, t.Size)
}

// CheckSpace refuses, before a byte is read, size bytes (-1: unknown)
// that the free space at name less the reserve and the writes in flight
// cannot hold: a form of several files, whose length bounds them all.
func (p *Pipeline) CheckSpace(ctx context.Context, name string, size int64) error {
	if _, _, err := p.room(ctx, name, size, false); err != nil {
		return err
	}
	return p.checkQuota(ctx, name, size)
}

// CheckRemove admits a removal under cond: the name policy, whether the
// store removes and applies conditions, and locks on name and below it
// that tokens do not unlock. It returns the store's Remover; tell Forget
// of a removal that succeeded.
func (p *Pipeline) CheckRemove(ctx context.Context, name string, cond largo.Condition, tokens []string) (largo.Remover, error) {
	rm, ok := p.cfg.Store.(largo.Remover)
	if !ok {
		return nil, fmt.Errorf("remove: %w", largo.ErrUnsupported)
	}
	if name == "" {
		return nil, fmt.Errorf("the root folder: %w", largo.ErrPermission)
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := p.checkLock(ctx, name, true, tokens); err != nil {
		return nil, err
	}
	return rm, p.checkCond(cond)
}

// Forget tells the Guard and the quotas that name is gone, and drops its
// record (records.go).
func (p *Pipeline) Forget(ctx context.Context, name string) {
	p.changed(name)
	if p.cfg.Guard != nil {
		p.cfg.Guard.Forget(ctx, name)
	}
	if p.cfg.Quota != nil {
		p.cfg.Quota.Forget(ctx, name)
	}
	p.dropRecord(ctx, name)
}

// Renamed tells the pipeline that the store renamed from (a file, or a
// folder with all below it) to to (largo.Renamer): what the Guard keeps
// (WebDAV's dead properties), the quotas' counts and the files' records
// go along, a file's derived files go (Derived), and the hooks are told of
// one move. A move by copies (MoveByCopy) needs no telling.
func (p *Pipeline) Renamed(ctx context.Context, from, to string) {
	p.changed(from)
	p.changed(to)
	if p.cfg.Guard != nil {
		p.cfg.Guard.Renamed(ctx, from, to)
	}
	if p.cfg.Quota != nil {
		p.cfg.Quota.Renamed(ctx, from, to)
	}
	rec := p.recordOf(ctx, from, largo.Info{}, true)
	p.moveRecords(ctx, from, to)
	p.followMove(ctx, from, to, largo.Info{}, rec)
	p.moved(ctx, from, to)
}

// changed tells Changes that name changed.
func (p *Pipeline) changed(name string) {
	if p.cfg.Changes != nil {
		p.cfg.Changes.Changed(name)
	}
}

// CheckLock refuses, with an error wrapping largo.ErrLocked, a change to name
// (with tree, to anything below it) that tokens do not unlock: for the
// changes that are no write of bytes (a folder made, properties set).
func (p *Pipeline) CheckLock(ctx context.Context, name string, tree bool, tokens []string) error {
	return p.checkLock(ctx, name, tree, tokens)
}

func (p *Pipeline) checkLock(ctx context.Context, name string, tree bool, tokens []string) error {
	if p.cfg.Guard == nil {
		return nil
	}
	return p.cfg.Guard.Locked(ctx, name, tree, tokens)
}

// admit checks all of a write but its room, and sets the condition it
// will carry.
func (p *Pipeline) admit(ctx context.Context, t *Target) error {
	if p.cr == nil {
		return fmt.Errorf("write: %w", largo.ErrUnsupported)
	}
	if err := CheckName(t.Name); err != nil {
		return err
	}
	if err := p.decide(ctx, t); err != nil {
		return err
	}
	if err := p.checkLock(ctx, t.Name, false, t.Tokens); err != nil {
		return err
	}
	if p.cfg.MaxSize > 0 && t.Size > p.cfg.MaxSize {
		return fmt.Errorf("%d bytes, limit %d: %w", t.Size, p.cfg.MaxSize, largo.ErrTooLarge)
	}
	if err := p.checkCond(t.Cond); err != nil {
		return err
	}
	in, err := p.cfg.Store.Stat(ctx, t.Name)
	exists := err == nil
	switch {
	case errors.Is(err, largo.ErrNotDir):
		return fmt.Errorf("%w: %w", largo.ErrParentNotDir, err)
	case err != nil && !errors.Is(err, largo.ErrNotFound):
		return err
	case exists && in.IsDir:
		return fmt.Errorf("%s: %w", t.Name, largo.ErrIsDir)
	}
	if err := t.Cond.Check(t.Name, in, exists); err != nil {
		return err
	}
	if exists {
		t.was, t.looked = in, true
		return nil // its folder is there
	}
	if err := p.checkFolder(ctx, t.Name); err != nil {
		return err
	}
	t.looked = true
	return nil
}

// known returns what admission found at the target, nil when it did not
// look (largo.CreateOptions.Known).
func (t *Target) known() *largo.Info {
	if !t.looked {
		return nil
	}
	was := t.was
	return &was
}

// createOptions are the options of the store's upload of t, of size
// bytes.
func (p *Pipeline) createOptions(t *Target, size int64) largo.CreateOptions {
	return largo.CreateOptions{Size: size, NoMkdir: p.cfg.NoMkdir, Condition: t.Cond, Known: t.known()}
}

// decide asks the store whether the write may be made at all, before a
// byte of it is read: the access gate's decision (package gate), which
// may also tighten the write's condition (a drop box only creates).
func (p *Pipeline) decide(ctx context.Context, t *Target) error {
	wc, ok := p.cfg.Store.(writeChecker)
	if !ok {
		return nil
	}
	cond, err := wc.CheckWrite(ctx, t.Name, t.Size, t.Cond)
	if err != nil {
		return err
	}
	t.Cond = cond
	return nil
}

// writeChecker is a store that decides writes before they start: the
// access gate's store.
type writeChecker interface {
	CheckWrite(ctx context.Context, name string, size int64, cond largo.Condition) (largo.Condition, error)
}

// checkCond refuses a condition the store cannot apply atomically: an
// object store whose server ignores conditional writes.
func (p *Pipeline) checkCond(cond largo.Condition) error {
	cw, ok := p.cfg.Store.(conditionalWriter)
	if ok && cond != (largo.Condition{}) && !cw.ConditionalWrites() {
		return fmt.Errorf("%w: %w", largo.ErrCondUnsupported, largo.ErrUnsupported)
	}
	return nil
}

// conditionalWriter is a store that tells whether it applies conditions
// to writes: an object store, whose server may not.
type conditionalWriter interface{ ConditionalWrites() bool }

// checkFolder refuses a target whose folder is a file, or is missing
// under NoMkdir. A folder that cannot be looked at for another reason is
// that reason's error, not a missing folder.
func (p *Pipeline) checkFolder(ctx context.Context, name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	in, err := p.cfg.Store.Stat(ctx, dir)
	switch {
	case err == nil && !in.IsDir, errors.Is(err, largo.ErrNotDir):
		return fmt.Errorf("%s: %w: %w", dir, largo.ErrParentNotDir, largo.ErrNotDir)
	case errors.Is(err, largo.ErrNotFound) && p.cfg.NoMkdir:
		return fmt.Errorf("%s: %w: %w", dir, largo.ErrMissingFolder, err)
	case err != nil && !errors.Is(err, largo.ErrNotFound):
		return err
	}
	return nil
}

// room checks a size (-1: unknown) against the free space less the
// reserve and the space promised to the writes in flight, and returns how
// many bytes the write may store. With promise, a known size is promised
// to the caller (the hold returned) until it is written, given back, or
// the write stops making progress.
func (p *Pipeline) room(ctx context.Context, name string, size int64, promise bool) (int64, *hold, error) {
	if p.space == nil {
		return math.MaxInt64, nil, nil
	}
	free, err := p.space.Free(ctx, name)
	if errors.Is(err, largo.ErrUnsupported) {
		return math.MaxInt64, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	avail := max(free-p.cfg.Reserve-p.promised(now), 0)
	if size > avail {
		return 0, nil, fmt.Errorf("%d bytes, %d free above the reserve and the writes in flight: %w", size, avail, largo.ErrNoSpace)
	}
	var h *hold
	if promise && size > 0 {
		h = &hold{left: size, progress: now}
		p.holds[h] = struct{}{}
	}
	return avail, h, nil
}

// promised returns the space promised to writes that make progress, and
// gives back the promises of those that do not. p.mu is held.
func (p *Pipeline) promised(now time.Time) int64 {
	var sum int64
	for h := range p.holds {
		if now.Sub(h.progress) >= StallAfter {
			h.dropped, h.left = true, 0
			delete(p.holds, h)
			continue
		}
		sum += h.left
	}
	return sum
}

// received counts n bytes of the write whose promise is h: progress,
// and that much less promised.
func (p *Pipeline) received(h *hold, n int64) {
	if h == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.dropped {
		return
	}
	if h.since += n; h.since >= progressQuantum {
		h.progress, h.since = p.cfg.Now(), 0
	}
	if h.left -= min(n, h.left); h.left == 0 {
		h.dropped = true
		delete(p.holds, h)
	}
}

// giveBack ends the promise h: the write ended.
func (p *Pipeline) giveBack(h *hold) {
	if h == nil {
		return
	}
	p.mu.Lock()
	h.dropped, h.left = true, 0
	delete(p.holds, h)
	p.mu.Unlock()
}

type nopObserver struct{}

func (nopObserver) PendingBytes(int64) {}

// Unmodified turns a write's If-Unmodified-Since date (see
// wire.UnmodifiedSince) into a condition the store applies atomically:
// when a file is at name, the write fails (ErrPrecondition) if the file
// was modified after since, and otherwise must find the file as it is
// now (If-Match of its ETag) when it commits. A missing file, which has
// no date, leaves cond as it is.
func (p *Pipeline) Unmodified(ctx context.Context, name string, since time.Time, cond largo.Condition) (largo.Condition, error) {
	in, err := p.cfg.Store.Stat(ctx, name)
	switch {
	case errors.Is(err, largo.ErrNotFound) || errors.Is(err, largo.ErrNotDir):
		return cond, nil
	case err != nil:
		return cond, err
	case in.IsDir || in.ModTime.IsZero():
		return cond, nil
	case in.ModTime.Truncate(time.Second).After(since):
		return cond, fmt.Errorf("%s modified since %s: %w", name, since.UTC().Format(time.RFC1123), largo.ErrPrecondition)
	case in.ETag != "":
		cond.IfMatch = in.ETag
	}
	return cond, nil
}
