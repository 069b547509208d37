package resumable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/gate"
	"largo/wire"
)

// An upload belongs to the principal that created it (package gate),
// recorded in its metadata under keyOwner and in the record of its end:
//
//   - only that principal reaches it: an offset, an append, a
//     cancellation by anyone else is answered as for an upload that does
//     not exist (404), before anything else is done, so that no request
//     in flight on it is stopped and nothing of it is told;
//   - an upload created through a share link (a drop box) is the link
//     holder's, who has no account: whoever holds its URL, which only the
//     link's holder was given, reaches it;
//   - it is placed with its owner's rights as they are when its last byte
//     arrives (a rule reloaded, a link revoked or expired since its
//     creation refuses it), never with those of whoever sent that byte;
//   - one staged by a version that recorded no owner is reached by its
//     URL as before, but never placed: nobody's rights can be known for
//     it (it expires as usual).
//
// The metadata keys that begin with serverKeys are the server's own: a
// client that sends one (tus Upload-Metadata, or the Upload-Metadata of
// an IETF POST) is refused, so that it can neither name an owner nor
// carry a condition or a protocol of its choosing.

// keyOwner holds the text form of the principal that created an upload
// (gate.Principal.String).
const keyOwner = "largo-owner"

// serverKeys begins every metadata key of the server's own.
const serverKeys = "largo-"

// Refusals of the upload owners' rules.
var (
	errServerKey = wire.Refuse(http.StatusBadRequest, "metadata keys that begin with "+serverKeys+" are the server's own: a request may not send them")
	errNoOwner   = wire.Refuse(http.StatusForbidden, "this upload was begun by an older version of the server, which kept no record of who began it: it cannot be stored; upload the file again")
	// errNoPrincipal refuses an upload created without a principal in its
	// context: a wiring mistake, never a client's doing.
	errNoPrincipal = fmt.Errorf("an upload created with no principal: %w", largo.ErrPermission)
)

// checkClientKeys refuses metadata a client sent that holds a key of the
// server's own.
func checkClientKeys(meta tusd.MetaData) error {
	for k := range meta {
		if strings.HasPrefix(strings.ToLower(k), serverKeys) {
			return fmt.Errorf("%q: %w", k, errServerKey)
		}
	}
	return nil
}

// creator returns the owner to record of an upload created with ctx: its
// principal's text form. A context without a principal, or with the
// server's, creates none.
func creator(ctx context.Context) (string, error) {
	p, ok := gate.From(ctx)
	if !ok || p.IsServer() {
		return "", errNoPrincipal
	}
	return p.String(), nil
}

// reaches reports whether ctx's principal may act on an upload whose
// recorded owner is owner: the owner itself; anyone, for an upload made
// through a share link (its URL is the capability) or one recorded with
// no owner (an older version's); the server, always.
func reaches(ctx context.Context, owner string) bool {
	if owner == "" {
		return true
	}
	o, ok := gate.Parse(owner)
	if !ok {
		return false
	}
	if o.LinkID() != "" {
		return true
	}
	p, ok := gate.From(ctx)
	return ok && (p == o || p.IsServer())
}

// asOwner returns ctx acting for the owner recorded in an upload's
// metadata: what its placing is decided for. An upload with no owner, or
// one no request could have created, is refused.
func asOwner(ctx context.Context, meta tusd.MetaData) (context.Context, error) {
	v := meta[keyOwner]
	if v == "" {
		return ctx, errNoOwner
	}
	o, ok := gate.Parse(v)
	if !ok || o.IsServer() {
		return ctx, fmt.Errorf("upload owner %q: %w", v, largo.ErrPermission)
	}
	return gate.With(ctx, o), nil
}

// reach reports whether ctx's principal may act on upload id: nil, or
// errNoUpload when it may not or there is no such upload (the two are one
// answer), or the error of a staging that could not be read. It reads the
// upload's record or its metadata, and changes nothing: a front end asks
// it before a request on the upload stops another or waits for its turn.
func (h *Handler) reach(ctx context.Context, id string) error {
	if d, ok := h.record(ctx, id); ok {
		if reaches(ctx, d.Owner) {
			return nil
		}
		return errNoUpload
	}
	_, err := h.store.GetUpload(ctx, id) // refuses another's
	if errors.Is(err, tusd.ErrNotFound) {
		return errNoUpload
	}
	return err
}
