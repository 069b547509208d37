// Package gate is where every read and write is decided: one function,
// at the store's door.
//
// A Principal (a user, the holder of a share link, or the server itself)
// travels in each request's context (With). Gate.Decide is the only
// reader of the access rules and of share links: may this principal do
// this operation (Op) to this name, or to this whole tree? Its answer is
// a value, a Decision: the principal, the policy and the link it was
// judged under, and the physical name the store is to act on. Store
// wraps a largo.Store, decides every call (stat, open, list with the
// entries filtered, create, adopt, copy, remove, rename, make folder) and
// acts on the decision's physical name and nothing else; it refuses every
// call whose context carries no principal. The HTTP front ends (serve,
// dav, resumable, s3api) and the write pipeline hold only the wrapped store; the
// server's own housekeeping (sweeps, the state area's records) holds the
// raw one. A front end that must refuse before it reads a body asks
// Check, which is the same decision.
//
// The decision, for a principal other than the server:
//
//   - a hidden or reserved name (dotfiles, the state area, _largo) is
//     never reachable: ErrNotFound;
//   - a user (or anonymous) needs the permissions the access rules give
//     on the name (auth.Rules: the longest path prefix), and for a tree
//     on everything below it;
//   - a link holder needs them from the link's scope (grants) and, at
//     the moment of the call, from the link's maker under the rules in
//     force: a link grants only what its maker may still do. Package
//     links keeps the link's record; it is judged here. A revoked or
//     expired link, or one whose maker is no user any more, grants
//     nothing; a drop box's limits (it only creates, and is capped) are
//     the decision's link's, never read again;
//   - a name of a sidecar's form (NAME.gz, NAME.br, NAME.zst:
//     largo.SidecarBase) needs read on NAME to be read and write on NAME
//     to be written, as it may be sent as NAME's encoding;
//   - what is judged is what is done: on a store with symbolic links
//     (largo.Resolver, a folder), a name is judged as spelled and at the
//     physical name it reaches, resolved as the kernel resolves it (each
//     link's target spliced in, ".." stepping back from where a link
//     led), by the stricter of the two; a link that leads into a hidden
//     name refuses the name, and Symlinks chooses whether links are
//     followed at all. A read, a look or a listing follows a link at the
//     name's end; a write, a removal or a move acts on the entry itself.
//     The store follows no link when it acts, so the decision is first
//     made on the spelling (the physical name assumed equal, which costs
//     no system call), and only where the store meets a link
//     (largo.ErrSymlink) is the name resolved and decided again: a link
//     made between a decision and its act fails the act instead of
//     leading it elsewhere.
//
// A refusal is largo.ErrUnauthorized for an anonymous principal (who may
// sign in: 401) and largo.ErrPermission for any other (403); it is made
// before the store is asked anything, so its answer is the same whether
// or not the name exists.
//
// A Gate is safe for concurrent use.
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"largo"
	"largo/auth"
	"largo/links"
)

// Symlinks is how the gate treats a name that reaches a symbolic link.
type Symlinks int

// The ways of treating symbolic links. Whatever the way, a name through a
// link is judged both as spelled and as resolved, and never reaches a
// hidden name.
const (
	// Follow follows every link that stays inside the store.
	Follow Symlinks = iota
	// Within follows a link only where it leads to its own folder or
	// below it (releases/latest -> v2.1); a link that reaches across
	// the tree (pub/x -> ../private) is not followed.
	Within
	// None follows no link: a name that reaches one is not found.
	None
)

// ParseSymlinks reads "follow", "within" or "none".
func ParseSymlinks(s string) (Symlinks, error) {
	for i, n := range symlinkNames {
		if s == n {
			return Symlinks(i), nil
		}
	}
	return 0, fmt.Errorf("%q: follow, within or none", s)
}

var symlinkNames = []string{"follow", "within", "none"}

// String returns the way's name.
func (s Symlinks) String() string {
	if s >= 0 && int(s) < len(symlinkNames) {
		return symlinkNames[s]
	}
	return fmt.Sprintf("Symlinks(%d)", int(s))
}

// Config configures a Gate. Access is required.
type Config struct {
	// Access holds the access policy in force (it may be reloaded).
	Access *auth.Access
	// Links holds the share links' records; nil turns links off.
	Links *links.Links
	// Resolver resolves names through symbolic links: the raw store's,
	// or nil for a store without links (a bucket).
	Resolver largo.Resolver
	// Symlinks is how links are treated.
	Symlinks Symlinks
	// LinkMaxUpload is the largest file a write through a share link may
	// store, unless the link names its own; zero means no cap of the
	// links' own (the server's --max-upload still holds).
	LinkMaxUpload int64
	// Logger receives refusals of calls that carried no principal (a
	// bug, never a client's doing); nil discards them.
	Logger *slog.Logger
}

// Gate decides every call. Create one with New.
type Gate struct {
	cfg Config
	log *slog.Logger
}

// New returns the Gate of cfg.
func New(cfg Config) *Gate {
	g := &Gate{cfg: cfg, log: cfg.Logger}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g
}

// Links returns the share links, nil when links are off.
func (g *Gate) Links() *links.Links { return g.cfg.Links }

// Access returns the access policy's holder.
func (g *Gate) Access() *auth.Access { return g.cfg.Access }

// errNoPrincipal refuses a call made without a principal.
var errNoPrincipal = fmt.Errorf("no principal in the context: %w", largo.ErrPermission)

// Check reports whether ctx's principal may do perm on name (perm 0: any
// permission at all, what a look at the name needs), and with tree on
// everything below it too: Decide, for a front end that refuses early
// (before a body) and needs only the answer.
func (g *Gate) Check(ctx context.Context, perm auth.Perm, name string, tree bool) error {
	_, err := g.decide(ctx, opOf(perm), name, tree, true)
	return err
}

// CheckName is Check of the name as spelled, following no link: for a
// question asked before a request is served (may it be answered from
// memory?), whose store call the gate decides again, whole. A name the
// principal may not read is refused here as it would be there.
func (g *Gate) CheckName(ctx context.Context, perm auth.Perm, name string) error {
	_, err := g.decide(ctx, opOf(perm), name, false, false)
	return err
}

// Where returns the physical name that name reaches, as the store's
// calls would reach it: for an op on the entry (entry), only its folder
// resolved, else through a link at its end too. It fails, wrapping
// ErrNotFound, where links on the way may not be followed; nothing is
// decided of the principal's permissions.
func (g *Gate) Where(ctx context.Context, name string, entry bool) (string, error) {
	return g.physical(ctx, Op{Entry: entry}, name)
}

// NewName is the last element of a name that asks what a folder's rules
// say of a new name in it (Check(ctx, auth.Write, largo.Join(dir,
// NewName), false): may a form, an upload area, a drop box create files
// there?). No rule and no file can have it: it is no valid name.
const NewName = "\x00"

// CheckDAV is Check for the WebDAV methods, which a drop-box link never
// passes: it only creates files, by the writes that carry their bytes.
func (g *Gate) CheckDAV(ctx context.Context, perm auth.Perm, name string, tree bool) error {
	if l := g.DropBox(ctx); l != nil {
		return fmt.Errorf("%s: %w: %w", name, largo.ErrCreateOnly, largo.ErrPermission)
	}
	return g.Check(ctx, perm, name, tree)
}

// CheckRoute decides a request for one of the server's own routes that
// the rules may name as if it were a file (/_largo/metrics): by the
// rules whose path is the route itself (auth.Policy.GrantedAt), so that
// only a rule of its own opens it, never one on a folder above it such
// as "/". A share link reaches no route.
func (g *Gate) CheckRoute(ctx context.Context, perm auth.Perm, name string) error {
	p, ok := From(ctx)
	switch {
	case !ok:
		return errNoPrincipal
	case p.kind == server:
		return nil
	case p.kind == link:
		return fmt.Errorf("%s: not through a share link: %w", name, largo.ErrPermission)
	}
	j := judge{p: p, pol: g.cfg.Access.Policy(), user: p.name}
	if !covers(j.pol.GrantedAt(j.user, name), perm) {
		return j.refusal(name)
	}
	return nil
}

// judge is a principal with what it takes to judge it: the policy in
// force at the start of the call, and the link it holds.
type judge struct {
	p    Principal
	pol  *auth.Policy
	user string      // whose rules apply: the user, or the link's maker
	link *links.Link // nil unless p holds one
	all  bool        // the link's maker is the operator: its scope alone
}

// judgeIn makes j the judge of p, or returns the refusal of a link that
// grants nothing any more.
func (g *Gate) judgeIn(j *judge, ctx context.Context, p Principal) error {
	*j = judge{p: p, pol: g.cfg.Access.Policy(), user: p.name}
	if p.kind != link {
		return nil
	}
	l, err := g.cfg.Links.Get(ctx, p.name)
	if err != nil {
		if errors.Is(err, links.ErrRevoked) || errors.Is(err, links.ErrOff) || errors.Is(err, links.ErrInvalid) {
			return fmt.Errorf("%w: %w", err, largo.ErrPermission)
		}
		return err
	}
	if !g.cfg.Access.Now().Before(l.Expires) {
		return fmt.Errorf("%w: %w", links.ErrExpired, largo.ErrPermission)
	}
	j.link, j.user = l, l.Maker
	switch {
	case l.Maker == "":
		j.all = true
	case !j.pol.Knows(l.Maker):
		return fmt.Errorf("share link of a user who is no longer: %w", largo.ErrPermission)
	}
	return nil
}

// allows reports whether the judge's principal may do perm on name (and
// below it, with tree), the sidecar rule included.
func (j *judge) allows(perm auth.Perm, name string, tree bool) bool {
	if !j.allowsName(perm, name, tree) {
		return false
	}
	need := perm & (auth.Read | auth.Write)
	if perm != 0 && need == 0 {
		return true // listing and removing: no file's bytes are reached
	}
	for n := name; ; {
		base, _, ok := largo.SidecarBase(n)
		if !ok {
			return true
		}
		if !j.allowsName(need, base, false) {
			return false
		}
		n = base
	}
}

// allowsName is allows without the sidecar rule.
func (j *judge) allowsName(perm auth.Perm, name string, tree bool) bool {
	if j.link != nil {
		have := grants(j.link, name)
		if perm == 0 && name == j.link.Path {
			have = auth.Read // a look at the link's own name: a drop box's folder
		}
		if !covers(have, perm) {
			return false
		}
		if tree && j.link.Kind != links.Folder {
			return false // only a folder link reaches below its name
		}
		if j.all {
			return true
		}
	}
	var have auth.Perm
	if tree {
		have = j.pol.AllowedBelow(j.user, name)
	} else {
		have = j.pol.Allowed(j.user, name)
	}
	return covers(have, perm)
}

// covers reports whether have grants perm; perm 0 asks for any.
func covers(have, perm auth.Perm) bool {
	if perm == 0 {
		return have != 0
	}
	return have&perm == perm
}

// refusal is the error of a refused call on name.
func (j *judge) refusal(name string) error {
	if j.p.kind == anonymous {
		return fmt.Errorf("%s: %w", name, largo.ErrUnauthorized)
	}
	if j.link != nil && j.link.Kind == links.Drop {
		return fmt.Errorf("%s: %w: %w", name, largo.ErrCreateOnly, largo.ErrPermission)
	}
	return fmt.Errorf("%s: %w", name, largo.ErrPermission)
}

// DropBox returns the link ctx's principal holds when it is a drop box
// (writes through it only create, never replace, and are capped), else
// nil.
func (g *Gate) DropBox(ctx context.Context) *links.Link {
	if l := g.LinkOf(ctx); l != nil && l.Kind == links.Drop {
		return l
	}
	return nil
}

// LinkOf returns the link ctx's principal holds, or nil.
func (g *Gate) LinkOf(ctx context.Context) *links.Link {
	p, _ := From(ctx)
	if p.kind != link {
		return nil
	}
	l, err := g.cfg.Links.Get(ctx, p.name)
	if err != nil {
		return nil
	}
	return l
}

// MaxUpload returns the largest file ctx's principal may write, zero for
// no cap of the gate's own: through a share link, the smaller of the
// link's own cap and Config.LinkMaxUpload.
func (g *Gate) MaxUpload(ctx context.Context) int64 { return g.maxUpload(g.LinkOf(ctx)) }

// maxUpload is MaxUpload for a write through l (nil: none).
func (g *Gate) maxUpload(l *links.Link) int64 {
	if l == nil {
		return 0
	}
	return l.UploadCap(g.cfg.LinkMaxUpload)
}
