package gate

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"largo"
	"largo/auth"
)

// Store is a largo.Store each of whose calls the Gate decides for the
// principal of the call's context before the store it wraps is asked.
// It offers every write capability (largo.Creator, Adopter,
// AssemblyAdopter, Copier, Remover, DirMaker, Renamer, SpaceReporter);
// where the wrapped store lacks one, the call fails with an error
// wrapping largo.ErrUnsupported, after the decision, as the store's own
// refusal would. It does not offer the state area (largo.StateKeeper): that is the server's own,
// reached through the raw store.
//
// Through a drop-box link, a write only creates (its commit carries
// If-None-Match: *, whatever it asked) and stores at most the link's cap.
type Store struct {
	g     *Gate
	inner largo.Store
}

var (
	_ largo.Store           = (*Store)(nil)
	_ largo.Creator         = (*Store)(nil)
	_ largo.Adopter         = (*Store)(nil)
	_ largo.AssemblyAdopter = (*Store)(nil)
	_ largo.Copier          = (*Store)(nil)
	_ largo.Remover         = (*Store)(nil)
	_ largo.DirMaker        = (*Store)(nil)
	_ largo.Renamer         = (*Store)(nil)
	_ largo.SpaceReporter   = (*Store)(nil)
)

// Store returns inner behind the gate.
func (g *Gate) Store(inner largo.Store) *Store { return &Store{g: g, inner: inner} }

// Gate returns the gate that decides the store's calls.
func (s *Store) Gate() *Gate { return s.g }

// Stat implements largo.Store: any permission on the name lets its
// metadata be seen.
func (s *Store) Stat(ctx context.Context, name string) (largo.Info, error) {
	if err := s.g.Check(ctx, 0, name, false); err != nil {
		return largo.Info{}, err
	}
	return s.inner.Stat(ctx, name)
}

// Open implements largo.Store: reading needs read. A folder that may be
// listed but not read opens as what it is (an error wrapping
// largo.ErrIsDir), so that its listing can be asked for.
//
// Where the name leads is asked of the opened file when it can tell
// (largo.Located: one system call), and only when it is elsewhere is the
// name resolved element by element and judged there too; the file is
// closed, unread, if that refuses it.
func (s *Store) Open(ctx context.Context, name string) (largo.File, error) {
	p, ok := From(ctx)
	if !ok {
		return nil, s.g.Check(ctx, auth.Read, name, false)
	}
	j, err := s.g.spelled(ctx, p, auth.Read, name, false)
	if err != nil {
		return nil, s.listable(ctx, name, err)
	}
	if j == nil { // the server
		return s.inner.Open(ctx, name)
	}
	if _, ok := s.inner.(largo.Resolver); !ok {
		return s.inner.Open(ctx, name)
	}
	f, err := s.inner.Open(ctx, name)
	if err != nil {
		if errors.Is(err, largo.ErrIsDir) {
			// A folder: judged where it resolves before it is said to be one.
			if rerr := s.g.resolved(ctx, j, auth.Read, name, false); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	}
	if lf, ok := f.(largo.Located); ok {
		if loc, err := lf.Location(); err == nil && loc == name {
			return f, nil // no link on the way
		}
	}
	if err := s.g.resolved(ctx, j, auth.Read, name, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// listable answers an Open refused (err) of a name that may be listed but
// not read: if it is a folder, that it is one, so that its listing can be
// asked for; otherwise err.
func (s *Store) listable(ctx context.Context, name string, err error) error {
	if s.g.Check(ctx, auth.List, name, false) != nil {
		return err
	}
	f, oerr := s.inner.Open(ctx, name)
	if oerr == nil {
		f.Close()
		return err
	}
	if errors.Is(oerr, largo.ErrIsDir) {
		return oerr
	}
	return err
}

// List implements largo.Store: listing needs list on the folder, and an
// entry is yielded only when it may be seen: a file when it may be read,
// a folder when it may be read or listed, each judged as it resolves too.
func (s *Store) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		p, ok := From(ctx)
		if !ok {
			yield(largo.Info{}, s.g.Check(ctx, auth.List, name, false))
			return
		}
		if err := s.g.check(ctx, p, auth.List, name, false); err != nil {
			yield(largo.Info{}, err)
			return
		}
		f, err := s.g.filter(ctx, p, name)
		if err != nil {
			yield(largo.Info{}, err)
			return
		}
		for in, err := range s.inner.List(ctx, name) {
			if err == nil && !f.sees(ctx, in) {
				continue
			}
			if !yield(in, err) {
				return
			}
		}
	}
}

// filter judges a folder's entries for one principal.
type filter struct {
	g        *Gate
	j        judge
	dir      string // the folder as spelled
	resolved string // where it resolves
	all      bool   // the principal sees every entry that is no link
}

func (g *Gate) filter(ctx context.Context, p Principal, dir string) (*filter, error) {
	j, err := g.judge(ctx, p)
	if err != nil {
		return nil, err
	}
	resolved, err := g.resolve(ctx, dir)
	if err != nil {
		return nil, err
	}
	f := &filter{g: g, j: j, dir: dir, resolved: resolved}
	f.all = p.kind == server || p.kind != link && j.pol.ReadsAll(p.name)
	return f, nil
}

// sees reports whether the entry in of the folder may be seen.
func (f *filter) sees(ctx context.Context, in largo.Info) bool {
	name := largo.Join(f.dir, in.Name)
	if largo.Reserved(name) {
		return false
	}
	resolved := largo.Join(f.resolved, in.Name)
	if in.Link {
		r, err := f.g.resolve(ctx, name)
		if err != nil {
			return false
		}
		resolved = r
	} else if f.all {
		return true
	}
	if f.j.p.kind == server {
		return true
	}
	return f.seen(in.IsDir, name) && (resolved == name || f.seen(in.IsDir, resolved))
}

func (f *filter) seen(dir bool, name string) bool {
	if dir {
		return f.j.allows(auth.Read, name, false) || f.j.allows(auth.List, name, false)
	}
	return f.j.allows(auth.Read, name, false)
}

// checkNew decides a write that creates or replaces name: the write
// permission, a drop box's sidecar names (sidecar.go), then the policy of
// new names.
func (s *Store) checkNew(ctx context.Context, name string) error {
	if err := s.g.Check(ctx, auth.Write, name, false); err != nil {
		return err
	}
	if err := s.checkSidecarName(ctx, name); err != nil {
		return err
	}
	return largo.CheckNew(name)
}

// CheckWrite decides, before a byte of it is read, a write of size
// bytes (-1: not known) to name under cond, and returns the condition the
// write must carry: cond, or a drop box's If-None-Match: *. The write
// pipeline's admission asks it; Create and Adopt decide the same again.
func (s *Store) CheckWrite(ctx context.Context, name string, size int64, cond largo.Condition) (largo.Condition, error) {
	if err := s.checkNew(ctx, name); err != nil {
		return cond, err
	}
	opt, _, _, err := s.forLink(ctx, largo.CreateOptions{Size: size, Condition: cond})
	return opt.Condition, err
}

// forLink applies a drop box's rules to a write's options: it only
// creates, and stores at most the cap.
func (s *Store) forLink(ctx context.Context, opt largo.CreateOptions) (largo.CreateOptions, int64, bool, error) {
	drop := s.g.DropBox(ctx) != nil
	if drop {
		opt.Condition = largo.Condition{IfNoneMatch: true}
	}
	max := s.g.MaxUpload(ctx)
	if max > 0 && opt.Size > max {
		return opt, 0, false, fmt.Errorf("%d bytes through a share link, its cap %d: %w", opt.Size, max, largo.ErrTooLarge)
	}
	return opt, max, drop, nil
}

// Create implements largo.Creator.
func (s *Store) Create(ctx context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkNew(ctx, name); err != nil {
		return nil, err
	}
	opt, max, drop, err := s.forLink(ctx, opt)
	if err != nil {
		return nil, err
	}
	cr, ok := s.inner.(largo.Creator)
	if !ok {
		return nil, fmt.Errorf("write: %w", largo.ErrUnsupported)
	}
	u, err := cr.Create(ctx, name, opt)
	if err != nil || max == 0 && !drop {
		return u, err
	}
	return &upload{Upload: u, max: max, createOnly: drop}, nil
}

// Adopt implements largo.Adopter.
func (s *Store) Adopt(ctx context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	return s.adopt(ctx, name, opt, func(opt largo.CreateOptions) (largo.Upload, error) {
		a, ok := s.inner.(largo.Adopter)
		if !ok {
			return nil, fmt.Errorf("adopt: %w", largo.ErrUnsupported)
		}
		return a.Adopt(ctx, name, staged, opt)
	})
}

// AdoptAssembly implements largo.AssemblyAdopter: a write of name, as
// Adopt's.
func (s *Store) AdoptAssembly(ctx context.Context, name, id string, opt largo.CreateOptions) (largo.Upload, error) {
	return s.adopt(ctx, name, opt, func(opt largo.CreateOptions) (largo.Upload, error) {
		a, ok := s.inner.(largo.AssemblyAdopter)
		if !ok {
			return nil, fmt.Errorf("adopt an assembly: %w", largo.ErrUnsupported)
		}
		return a.AdoptAssembly(ctx, name, id, opt)
	})
}

// adopt decides the adoption of bytes already stored as a write of name,
// and makes it by take, under the options a link imposes.
func (s *Store) adopt(ctx context.Context, name string, opt largo.CreateOptions, take func(largo.CreateOptions) (largo.Upload, error)) (largo.Upload, error) {
	if err := s.checkNew(ctx, name); err != nil {
		return nil, err
	}
	opt, _, drop, err := s.forLink(ctx, opt)
	if err != nil {
		return nil, err
	}
	u, err := take(opt)
	if err != nil || !drop {
		return u, err
	}
	return &upload{Upload: u, createOnly: true}, nil
}

// Copy implements largo.Copier: read of src, write of name.
func (s *Store) Copy(ctx context.Context, name, src string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.g.Check(ctx, auth.Read, src, false); err != nil {
		return nil, err
	}
	if err := s.checkNew(ctx, name); err != nil {
		return nil, err
	}
	opt, _, drop, err := s.forLink(ctx, opt)
	if err != nil {
		return nil, err
	}
	cp, ok := s.inner.(largo.Copier)
	if !ok {
		return nil, fmt.Errorf("copy: %w", largo.ErrUnsupported)
	}
	u, err := cp.Copy(ctx, name, src, opt)
	if err != nil || !drop {
		return u, err
	}
	return &upload{Upload: u, createOnly: true}, nil
}

// notDrop refuses what a drop box may not do, though it writes: anything
// but creating a file.
func (s *Store) notDrop(ctx context.Context, name string) error {
	if s.g.DropBox(ctx) != nil {
		return fmt.Errorf("%s: %w: %w", name, largo.ErrCreateOnly, largo.ErrPermission)
	}
	return nil
}

// Remove implements largo.Remover: delete on the name, and below it for
// a recursive removal.
func (s *Store) Remove(ctx context.Context, name string, opt largo.RemoveOptions) error {
	if err := s.g.Check(ctx, auth.Delete, name, opt.Recursive); err != nil {
		return err
	}
	rm, ok := s.inner.(largo.Remover)
	if !ok {
		return fmt.Errorf("remove: %w", largo.ErrUnsupported)
	}
	return rm.Remove(ctx, name, opt)
}

// MakeDir implements largo.DirMaker: write on the name; a drop box
// makes no folder.
func (s *Store) MakeDir(ctx context.Context, name string) error {
	if err := s.notDrop(ctx, name); err != nil {
		return err
	}
	if err := s.checkNew(ctx, name); err != nil {
		return err
	}
	dm, ok := s.inner.(largo.DirMaker)
	if !ok {
		return fmt.Errorf("make folder: %w", largo.ErrUnsupported)
	}
	return dm.MakeDir(ctx, name)
}

// Rename implements largo.Renamer: read and delete on from and all below
// it, write on to and all below it.
func (s *Store) Rename(ctx context.Context, from, to string) error {
	if err := s.notDrop(ctx, to); err != nil {
		return err
	}
	if err := s.g.Check(ctx, auth.Read|auth.Delete, from, true); err != nil {
		return err
	}
	if err := s.g.Check(ctx, auth.Write, to, true); err != nil {
		return err
	}
	if err := largo.CheckNew(to); err != nil {
		return err
	}
	rn, ok := s.inner.(largo.Renamer)
	if !ok {
		return fmt.Errorf("rename: %w", largo.ErrUnsupported)
	}
	return rn.Rename(ctx, from, to)
}

// Free implements largo.SpaceReporter. The free space is no secret of
// any file's: it is not decided.
func (s *Store) Free(ctx context.Context, name string) (int64, error) {
	sr, ok := s.inner.(largo.SpaceReporter)
	if !ok {
		return 0, fmt.Errorf("free space: %w", largo.ErrUnsupported)
	}
	return sr.Free(ctx, name)
}

// ConditionalWrites tells whether the wrapped store applies conditions
// to writes (an object store may not).
func (s *Store) ConditionalWrites() bool {
	if cw, ok := s.inner.(interface{ ConditionalWrites() bool }); ok {
		return cw.ConditionalWrites()
	}
	return true
}

// Has reports whether the wrapped store offers the capability that
// probe's type names, for callers that choose another way when it does
// not (a move by copy and removal where the store cannot rename).
func Has[C any](s largo.Store) bool {
	if gs, ok := s.(*Store); ok {
		s = gs.inner
	}
	_, ok := s.(C)
	return ok
}

// upload is a write through a share link: capped, and only creating.
type upload struct {
	largo.Upload
	max        int64 // zero: no cap
	n          int64
	createOnly bool
}

func (u *upload) Write(p []byte) (int, error) {
	if u.max > 0 && u.n+int64(len(p)) > u.max {
		return 0, fmt.Errorf("more than %d bytes through a share link: %w", u.max, largo.ErrTooLarge)
	}
	n, err := u.Upload.Write(p)
	u.n += int64(n)
	return n, err
}

func (u *upload) Commit(ctx context.Context, cond largo.Condition) (largo.Info, bool, error) {
	if u.createOnly {
		cond = largo.Condition{IfNoneMatch: true}
	}
	return u.Upload.Commit(ctx, cond)
}

// Open returns a gate under which everyone may do everything, and st
// behind it, its names judged where they resolve: what a server without
// an access policy reads and writes through (the one-user policy of
// --upload-open). Every call still needs a principal in its context.
func Open(st largo.Store) (*Gate, *Store) {
	cfg := Config{Access: auth.New(auth.OneUser("", true), nil)}
	cfg.Resolver, _ = st.(largo.Resolver)
	g := New(cfg)
	return g, g.Store(st)
}
