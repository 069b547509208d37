package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"largo"
	"largo/auth"
	"largo/links"
)

// Op is what a store call does to a name: the permissions it needs, and
// whether it acts on the name's own entry in its folder (a write, a
// removal, a move: a symbolic link there is the thing acted on, never
// followed) or on what the name reaches (a look, a read, a listing: a
// link there is followed).
type Op struct {
	Perm  auth.Perm
	Entry bool
}

// The operations of the store's calls.
var (
	// OpLook sees that a name exists, and its metadata: any permission.
	OpLook = Op{}
	// OpRead reads a file's bytes.
	OpRead = Op{Perm: auth.Read}
	// OpList lists a folder.
	OpList = Op{Perm: auth.List}
	// OpWrite creates or replaces the entry (a file, a folder).
	OpWrite = Op{Perm: auth.Write, Entry: true}
	// OpDelete removes the entry.
	OpDelete = Op{Perm: auth.Delete, Entry: true}
	// OpMove moves the entry away: its bytes go elsewhere.
	OpMove = Op{Perm: auth.Read | auth.Delete, Entry: true}
)

// opOf is the Op of a permission a front end asks about: writing and
// removing act on the entry.
func opOf(perm auth.Perm) Op {
	return Op{Perm: perm, Entry: perm&(auth.Write|auth.Delete) != 0}
}

// Decision is what the gate judged of one call, as a value: who (the
// principal, the policy in force, the link held), which operation on
// which name, and the physical name that the store is to act on and
// nothing else. A store wrapper acts on Physical; a drop box's limits
// are the decision's link's, never read again.
type Decision struct {
	Op        Op
	Tree      bool
	Principal Principal
	// Name is the name as spelled; Physical the name of what it reaches
	// (largo.Resolver), which the store acts on following no link.
	Name, Physical string
	// Link is the share link the principal holds, nil for none.
	Link *links.Link
	j    judge
	// resolved is set when Physical comes from a resolution; unset, it
	// is Name, assumed to meet no link, which the store verifies.
	resolved bool
}

// Policy returns the access policy the decision was made under (nil for
// the server, which no policy binds).
func (d *Decision) Policy() *auth.Policy { return d.j.pol }

// DropBox reports whether the decision's principal holds a drop box:
// its writes only create, and are capped.
func (d *Decision) DropBox() bool { return d.Link != nil && d.Link.Kind == links.Drop }

// Decide judges op on name (and with tree, on everything below it) for
// ctx's principal, and returns what was judged: the name is resolved
// through the store's links, judged as spelled and where it leads, by
// the stricter of the two. It is the one decision; the store wrapper
// makes it for every call, and a front end that refuses early makes it
// too.
func (g *Gate) Decide(ctx context.Context, op Op, name string, tree bool) (*Decision, error) {
	return g.decide(ctx, op, name, tree, true)
}

// decide is Decide; without resolve, the physical name is assumed to be
// the spelled one (no link on the way), which a store that follows no
// link verifies by failing with largo.ErrSymlink where it is wrong.
func (g *Gate) decide(ctx context.Context, op Op, name string, tree, resolve bool) (*Decision, error) {
	d := new(Decision)
	if err := g.decideIn(d, ctx, op, name, tree, resolve); err != nil {
		return nil, err
	}
	return d, nil
}

// decideIn is decide, into d: a caller that keeps no decision past its
// call (a read) decides on its own stack, and a read costs the gate no
// allocation.
func (g *Gate) decideIn(d *Decision, ctx context.Context, op Op, name string, tree, resolve bool) error {
	p, ok := From(ctx)
	if !ok {
		g.log.Error("store call without a principal refused", "name", name)
		return errNoPrincipal
	}
	*d = Decision{Op: op, Tree: tree, Principal: p, Name: name, Physical: name}
	if p.kind == server {
		d.j = judge{p: p}
		if resolve {
			phys, err := g.physical(ctx, op, name)
			if err != nil {
				return err
			}
			d.Physical, d.resolved = phys, true
		}
		return nil
	}
	if largo.Reserved(name) {
		return fmt.Errorf("%s: hidden: %w", name, largo.ErrNotFound)
	}
	if err := g.judgeIn(&d.j, ctx, p); err != nil {
		return err
	}
	d.Link = d.j.link
	if !d.j.allows(op.Perm, name, tree) {
		return d.j.refusal(name)
	}
	if !resolve {
		return nil
	}
	phys, err := g.physical(ctx, op, name)
	if err != nil {
		return err
	}
	if phys != name && !d.j.allows(op.Perm, phys, tree) {
		return d.j.refusal(name)
	}
	d.Physical, d.resolved = phys, true
	return nil
}

// physical returns the name of what op on name reaches, or ErrNotFound
// when the links on the way may not be followed there: for an op on
// the entry, where its folder leads, and the entry's own element.
func (g *Gate) physical(ctx context.Context, op Op, name string) (string, error) {
	if g.cfg.Resolver == nil || name == "" {
		return name, nil
	}
	if op.Entry {
		dir, elem := split(name)
		if dir == "" {
			return name, nil
		}
		r, err := g.resolve(ctx, dir)
		return largo.Join(r, elem), err
	}
	return g.resolve(ctx, name)
}

// resolve returns where name leads, or ErrNotFound when it may not be
// followed there.
func (g *Gate) resolve(ctx context.Context, name string) (string, error) {
	resolved, hops, err := g.cfg.Resolver.Resolve(ctx, name)
	if err != nil {
		return "", err
	}
	if len(hops) == 0 {
		return resolved, nil
	}
	if err := g.follows(hops); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if largo.Reserved(resolved) {
		return "", fmt.Errorf("%s: leads to a hidden name: %w", name, largo.ErrNotFound)
	}
	return resolved, nil
}

// follows reports whether the links met may be followed.
func (g *Gate) follows(hops []largo.Hop) error {
	switch g.cfg.Symlinks {
	case None:
		return fmt.Errorf("symbolic links are not followed: %w", largo.ErrNotFound)
	case Within:
		for _, h := range hops {
			if !largo.Within(largo.Parent(h.Link), h.Target) {
				return fmt.Errorf("a symbolic link leads outside its folder: %w", largo.ErrNotFound)
			}
		}
	}
	for _, h := range hops {
		if largo.Reserved(h.Target) {
			return fmt.Errorf("a symbolic link leads to a hidden name: %w", largo.ErrNotFound)
		}
	}
	return nil
}

// maxDecisions bounds how often one call is decided again because a
// link moved between a decision and its act.
const maxDecisions = 4

// act decides op on name and runs do on the decision: first on the name
// as spelled, assumed to meet no link, which the store verifies by
// following none; where one stands on the way (largo.ErrSymlink) the
// name is resolved, judged again where it leads, and do runs on that;
// a link that moves again meanwhile is decided again, a few times.
func (g *Gate) act(ctx context.Context, op Op, name string, tree bool, do func(*Decision) error) error {
	for try := 0; ; try++ {
		d, err := g.decide(ctx, op, name, tree, try > 0)
		if err != nil {
			return err
		}
		err = do(d)
		if !g.again(err, try) {
			return err
		}
	}
}

// act2 is act for a call on two names (a copy, a move): both decided,
// and both decided again, resolved, when a link stands on either's way.
func (g *Gate) act2(ctx context.Context, op1 Op, name1 string, tree1 bool, op2 Op, name2 string, tree2 bool, do func(d1, d2 *Decision) error) error {
	for try := 0; ; try++ {
		d1, err := g.decide(ctx, op1, name1, tree1, try > 0)
		if err != nil {
			return err
		}
		d2, err := g.decide(ctx, op2, name2, tree2, try > 0)
		if err != nil {
			return err
		}
		err = do(d1, d2)
		if !g.again(err, try) {
			return err
		}
	}
}

// again reports whether a call that failed with err on its try-th
// decision is to be decided again.
func (g *Gate) again(err error, try int) bool {
	return g.cfg.Resolver != nil && try < maxDecisions-1 && errors.Is(err, largo.ErrSymlink)
}

// split returns the folder of a name ("" for the root) and its last
// element.
func split(name string) (dir, elem string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}
