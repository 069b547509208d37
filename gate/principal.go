package gate

import (
	"context"

	"largo"
)

// Principal is who a request acts for: a user of the access policy (or
// nobody: anonymous), the holder of a share link, or the server itself
// (sweeps and records, never a request). The zero value is anonymous.
// A Principal is a small value, compared with Equal.
type Principal struct {
	kind kind
	name string // the user's name, or the link's ID
}

type kind uint8

const (
	anonymous kind = iota
	user
	link
	server
)

// Anonymous is who sends no credential.
func Anonymous() Principal { return Principal{} }

// User is the user name of the access policy; "" is Anonymous.
func User(name string) Principal {
	if name == "" {
		return Principal{}
	}
	return Principal{kind: user, name: name}
}

// LinkHolder is whoever holds the share link id (a verified one: see
// links.Links.Verify).
func LinkHolder(id string) Principal { return Principal{kind: link, name: id} }

// Server is the server itself, for its own housekeeping: it may do
// everything, and no request ever carries it.
func Server() Principal { return Principal{kind: server} }

// IsAnonymous reports whether p sent no credential.
func (p Principal) IsAnonymous() bool { return p.kind == anonymous }

// UserName returns the user's name, or "" for any other principal.
func (p Principal) UserName() string {
	if p.kind == user {
		return p.name
	}
	return ""
}

// LinkID returns the share link's ID, or "" for any other principal.
func (p Principal) LinkID() string {
	if p.kind == link {
		return p.name
	}
	return ""
}

// IsServer reports whether p is the server itself.
func (p Principal) IsServer() bool { return p.kind == server }

// String returns p in the form Parse reads: "anonymous", "user:NAME",
// "link:ID" or "server". It is what records that belong to a principal
// (an upload, a lock) keep of their owner.
func (p Principal) String() string {
	switch p.kind {
	case user:
		return "user:" + p.name
	case link:
		return "link:" + p.name
	case server:
		return "server"
	}
	return "anonymous"
}

// Parse reads what String wrote; ok is false for anything else.
func Parse(s string) (p Principal, ok bool) {
	switch {
	case s == "anonymous":
		return Principal{}, true
	case s == "server":
		return Server(), true
	case len(s) > 5 && s[:5] == "user:":
		return User(s[5:]), true
	case len(s) > 5 && s[:5] == "link:":
		return LinkHolder(s[5:]), true
	}
	return Principal{}, false
}

type principalKey struct{}

// With returns ctx carrying p: every store call made with it is decided
// for p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal ctx carries; ok is false when it carries
// none, which the gate refuses everything.
func From(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ClientKeys returns the keys the client of a request is counted by in a
// budget that clients share (limit.Budget), each holding at most its
// share: its address, remote (largo.ClientOf: an IPv6 /64 counts as
// one), and the user it signed in as or the share link it came through,
// as ctx's principal says. A client with many addresses is still one
// user; many users behind one address are still one address.
func ClientKeys(ctx context.Context, remote string) []string {
	keys := make([]string, 1, 2)
	keys[0] = largo.ClientOf(remote)
	if p, _ := From(ctx); !p.IsAnonymous() && !p.IsServer() {
		keys = append(keys, p.String()) // user:NAME or link:ID, never an address
	}
	return keys
}
