package ingest

import (
	"context"

	"largo"
)

// Hooks is what is told of writes beyond the store: a pre-upload hook
// that may refuse an upload or give it metadata, and notifications of
// the changes made (package hooks). Implementations must be safe for
// concurrent use.
type Hooks interface {
	// Admit asks whether the upload u may go ahead, before a byte of it
	// is stored. An error refuses it, with the status and reason the
	// client is answered with (a *wire.StatusError); the metadata
	// returned is carried with the upload to its committed event.
	Admit(ctx context.Context, u Upload) (map[string]string, error)
	// Notify records e to be sent. It returns once e is kept durably, or
	// has failed to be (which the implementation logs and counts: the
	// change itself is made already).
	Notify(ctx context.Context, e Event)
}

// Upload is what the pre-upload hook is asked about.
type Upload struct {
	// Name is the file to be written.
	Name string
	// Size is its length, or -1 when it is not known yet.
	Size int64
	// Protocol is the front end that carries it (Target.Protocol).
	Protocol string
	// Metadata is what the client said of the file (tus's
	// Upload-Metadata, less the server's own keys); nil for none.
	Metadata map[string]string
}

// The types of Event.
const (
	EventCommitted = "committed" // a file written (any protocol, a copy too)
	EventDeleted   = "deleted"   // a file or folder removed by a client
	EventMoved     = "moved"     // a file or folder renamed or moved
	EventExpired   = "expired"   // a file removed because it expired
)

// Event is a change to tell the notification receiver of.
type Event struct {
	// Type is one of EventCommitted, EventDeleted, EventMoved,
	// EventExpired.
	Type string
	// Name is the file or folder changed; for a move, where it is now.
	Name string
	// From is where a moved file or folder was; "" for other events.
	From string
	// Info describes the file: as committed, as it was when removed
	// (zero when it was not looked at), as moved.
	Info largo.Info
	// SHA256 is the committed file's SHA-256, when known.
	SHA256 []byte
	// Protocol is the front end that carried a committed write.
	Protocol string
	// Metadata is what the pre-upload hook answered for a committed
	// upload.
	Metadata map[string]string
}

// ask puts the upload t asks for to the pre-upload hook, and keeps what
// it answers in t.Hooked. A move by copies is no upload: never asked.
func (p *Pipeline) ask(ctx context.Context, t *Target) error {
	if p.cfg.Hooks == nil || t.moving {
		return nil
	}
	meta, err := p.cfg.Hooks.Admit(ctx, Upload{Name: t.Name, Size: t.Size, Protocol: t.Protocol, Metadata: t.Metadata})
	if err != nil {
		return err
	}
	t.Hooked = meta
	return nil
}

// notify tells the hooks of e, if any.
func (p *Pipeline) notify(ctx context.Context, e Event) {
	if p.cfg.Hooks != nil {
		p.cfg.Hooks.Notify(context.WithoutCancel(ctx), e)
	}
}

// Accept admits a resumable upload at its creation: everything Check
// checks, then the pre-upload hook (Config.Hooks), whose metadata it
// returns in t.Hooked for the caller to keep with the upload and give
// back to Place. A partial upload of a parallel one is checked with
// Check: the hook is asked once, of the final upload.
func (p *Pipeline) Accept(ctx context.Context, t Target) (Target, error) {
	if err := p.Check(ctx, t); err != nil {
		return t, err
	}
	return p.Ask(ctx, t)
}

// Ask puts the upload t, admitted already, to the pre-upload hook alone,
// and returns it with the hook's answer in t.Hooked: for a creation that
// Check admits on terms of its own (a final upload whose room is its
// partials').
func (p *Pipeline) Ask(ctx context.Context, t Target) (Target, error) {
	err := p.ask(ctx, &t)
	return t, err
}

// Removed tells the pipeline that a client removed name (a file, or a
// folder with all below it), which was in before it went (zero when it
// was not looked at): Forget, the file's derived files removed (Derived),
// and a deleted event. A name forgotten for
// another reason (a file about to be replaced, the old name of a move)
// is told to Forget alone.
func (p *Pipeline) Removed(ctx context.Context, name string, in largo.Info) {
	rec := p.recordOf(ctx, name, in, true)
	p.Forget(ctx, name)
	p.follow(ctx, Change{Name: name, Was: in, Record: rec})
	p.notify(ctx, Event{Type: EventDeleted, Name: name, Info: in})
}

// Expired tells the pipeline that name, described by in, was removed
// because it expired (an expiry rule, a link's last download): Forget,
// the file's derived files removed (Derived), and an expired event.
func (p *Pipeline) Expired(ctx context.Context, name string, in largo.Info) {
	rec := p.recordOf(ctx, name, in, true)
	p.Forget(ctx, name)
	p.follow(ctx, Change{Name: name, Was: in, Record: rec})
	p.notify(ctx, Event{Type: EventExpired, Name: name, Info: in})
}

// moved sends the event of a move made, the store's rename or copies:
// what is at to now is looked at for its description.
func (p *Pipeline) moved(ctx context.Context, from, to string) {
	if p.cfg.Hooks == nil {
		return
	}
	in, _ := p.cfg.Store.Stat(ctx, to)
	p.notify(ctx, Event{Type: EventMoved, Name: to, From: from, Info: in})
}
