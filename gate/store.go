package gate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"

	"largo"
	"largo/auth"
)

// Store is a largo.Store each of whose calls the Gate decides for the
// principal of the call's context before the store it wraps is asked,
// which is then asked for the decision's physical name. It offers every
// write capability (largo.Creator, Adopter, AssemblyAdopter, Copier,
// Remover, DirMaker, Renamer, SpaceReporter); where the wrapped store
// lacks one, the call fails with an error wrapping largo.ErrUnsupported,
// after the decision, as the store's own refusal would. It does not
// offer the state area (largo.StateKeeper): that is the server's own,
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
	for try := 0; ; try++ {
		// As act does, with the decision on this stack: a read keeps
		// none, and costs the gate no allocation.
		var d Decision
		if err := s.g.decideIn(&d, ctx, OpLook, name, false, try > 0); err != nil {
			return largo.Info{}, err
		}
		in, err := s.inner.Stat(ctx, d.Physical)
		if !s.g.again(err, try) {
			return spelled(in, &d), err
		}
	}
}

// spelled returns in, the metadata of a decision's physical name, under
// the name as spelled: a link's name, not its target's, names what the
// client asked for (its type, a download's name).
func spelled(in largo.Info, d *Decision) largo.Info {
	if d.Physical != d.Name && in.Name != "" {
		_, in.Name = split(d.Name)
	}
	return in
}

// Open implements largo.Store: reading needs read. A folder that may be
// listed but not read opens as what it is (an error wrapping
// largo.ErrIsDir), so that its listing can be asked for.
func (s *Store) Open(ctx context.Context, name string) (largo.File, error) {
	f, err := s.open(ctx, name)
	if err != nil && !errors.Is(err, largo.ErrIsDir) && isRefusal(err) {
		return nil, s.listable(ctx, name, err)
	}
	return f, err
}

// open is Open without the listable folder: act, with the decision on
// this stack, as Stat.
func (s *Store) open(ctx context.Context, name string) (largo.File, error) {
	for try := 0; ; try++ {
		var d Decision
		if err := s.g.decideIn(&d, ctx, OpRead, name, false, try > 0); err != nil {
			return nil, err
		}
		f, err := s.inner.Open(ctx, d.Physical)
		if err == nil && d.Physical != d.Name {
			return named(f, spelled(f.Info(), &d)), nil
		}
		if !s.g.again(err, try) {
			return f, err
		}
	}
}

// isRefusal reports whether err is the gate's refusal of a call.
func isRefusal(err error) bool {
	return errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized)
}

// listable answers an Open refused (err) of a name that may be listed but
// not read: if it is a folder, that it is one, so that its listing can be
// asked for; otherwise err.
func (s *Store) listable(ctx context.Context, name string, err error) error {
	var dir bool
	lerr := s.g.act(ctx, OpList, name, false, func(d *Decision) error {
		in, err := s.inner.Stat(ctx, d.Physical)
		dir = err == nil && in.IsDir
		return err
	})
	if lerr == nil && dir {
		return fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	}
	return err
}

// List implements largo.Store: listing needs list on the folder, and an
// entry is yielded only when it may be seen: a file when it may be read,
// a folder when it may be read or listed, each judged as spelled and
// where it is. A symbolic link is yielded with the metadata of what it
// leads to, where the gate lets it be followed, and judged there too.
func (s *Store) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		for try := 0; ; try++ {
			d, err := s.g.decide(ctx, OpList, name, false, try > 0)
			if err != nil {
				yield(largo.Info{}, err)
				return
			}
			f := s.filter(d)
			first, again := true, false
			for in, err := range s.inner.List(ctx, d.Physical) {
				if first && s.g.again(err, try) {
					again = true // a link on the way: decided again
					break
				}
				first = false
				if err == nil {
					var ok bool
					if in, ok = f.sees(ctx, in); !ok {
						continue
					}
				}
				if !yield(in, err) {
					return
				}
			}
			if !again {
				return
			}
		}
	}
}

// filter judges a folder's entries for one decision's principal.
type filter struct {
	s   *Store
	d   *Decision
	all bool // the principal sees every entry that is no link
}

func (s *Store) filter(d *Decision) *filter {
	p := d.Principal
	all := p.kind == server || p.kind != link && d.j.pol.ReadsAll(p.name)
	return &filter{s: s, d: d, all: all}
}

// sees reports whether the entry in of the folder may be seen, and
// returns it as it is to be seen: a link as what it leads to.
func (f *filter) sees(ctx context.Context, in largo.Info) (largo.Info, bool) {
	name := largo.Join(f.d.Name, in.Name)
	phys := largo.Join(f.d.Physical, in.Name)
	if largo.Reserved(name) || largo.Reserved(phys) {
		return in, false
	}
	if in.Link {
		to, err := f.s.g.physical(ctx, OpLook, phys)
		if err != nil {
			return in, false
		}
		target, err := f.s.inner.Stat(ctx, to)
		if err != nil {
			return in, false
		}
		target.Name, target.Link = in.Name, true
		in, phys = target, to
	} else if f.all && !f.d.resolved {
		return in, true
	}
	if f.d.Principal.kind == server {
		return in, true
	}
	return in, f.seen(in.IsDir, name) && (phys == name || f.seen(in.IsDir, phys))
}

func (f *filter) seen(dir bool, name string) bool {
	if dir {
		return f.d.j.allows(auth.Read, name, false) || f.d.j.allows(auth.List, name, false)
	}
	return f.d.j.allows(auth.Read, name, false)
}

// CheckWrite decides, before a byte of it is read, a write of size
// bytes (-1: not known) to name under cond, and returns the condition the
// write must carry: cond, or a drop box's If-None-Match: *. The write
// pipeline's admission asks it; Create and Adopt decide the same again.
func (s *Store) CheckWrite(ctx context.Context, name string, size int64, cond largo.Condition) (largo.Condition, error) {
	d, err := s.g.Decide(ctx, OpWrite, name, false)
	if err != nil {
		return cond, err
	}
	if err := largo.CheckNew(name); err != nil {
		return cond, err
	}
	if err := s.sidecarName(ctx, d); err != nil {
		return cond, err
	}
	opt, _, err := s.g.forLink(d, largo.CreateOptions{Size: size, Condition: cond})
	if err == nil && d.DropBox() {
		// Said as what it is, not as the condition's failure.
		if _, serr := s.inner.Stat(ctx, d.Physical); serr == nil {
			return cond, nameTaken(d.Name, largo.ErrPrecondition)
		}
	}
	return opt.Condition, err
}

// nameTaken is a drop box's write to a name that is taken (err: the
// failed condition): a refusal of its own (largo.ErrNameTaken).
func nameTaken(name string, err error) error {
	if name == "" {
		return fmt.Errorf("%w: %w", largo.ErrNameTaken, err)
	}
	return fmt.Errorf("%s: %w: %w", name, largo.ErrNameTaken, err)
}

// forLink applies a drop box's rules to a write's options, from the
// write's decision: it only creates, and stores at most the cap (zero:
// none).
func (g *Gate) forLink(d *Decision, opt largo.CreateOptions) (largo.CreateOptions, int64, error) {
	if d.DropBox() {
		opt.Condition = largo.Condition{IfNoneMatch: true}
	}
	max := g.maxUpload(d.Link)
	if max > 0 && opt.Size > max {
		return opt, 0, fmt.Errorf("%d bytes through a share link, its cap %d: %w", opt.Size, max, largo.ErrTooLarge)
	}
	return opt, max, nil
}

// write decides a write of name and makes it by do, as upload does.
func (s *Store) write(ctx context.Context, name string, opt largo.CreateOptions, do func(d *Decision, opt largo.CreateOptions) (largo.Upload, error)) (largo.Upload, error) {
	var u largo.Upload
	err := s.g.act(ctx, OpWrite, name, false, func(d *Decision) (err error) {
		if err := s.sidecarName(ctx, d); err != nil {
			return err
		}
		u, err = s.g.upload(d, opt, do)
		return err
	})
	return u, err
}

// upload makes the write d decided by do, under the options the
// decision imposes, and returns it capped and only creating where the
// decision's link says so.
func (g *Gate) upload(d *Decision, opt largo.CreateOptions, do func(d *Decision, opt largo.CreateOptions) (largo.Upload, error)) (largo.Upload, error) {
	if err := largo.CheckNew(d.Name); err != nil {
		return nil, err
	}
	opt, max, err := g.forLink(d, opt)
	if err != nil {
		return nil, err
	}
	u, err := do(d, opt)
	if err != nil {
		return nil, err
	}
	if max > 0 || d.DropBox() {
		u = &upload{Upload: u, max: max, createOnly: d.DropBox()}
	}
	return u, nil
}

// Create implements largo.Creator.
func (s *Store) Create(ctx context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	cr, ok := s.inner.(largo.Creator)
	return s.write(ctx, name, opt, func(d *Decision, opt largo.CreateOptions) (largo.Upload, error) {
		if !ok {
			return nil, fmt.Errorf("write: %w", largo.ErrUnsupported)
		}
		return cr.Create(ctx, d.Physical, opt)
	})
}

// Adopt implements largo.Adopter.
func (s *Store) Adopt(ctx context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	a, ok := s.inner.(largo.Adopter)
	return s.write(ctx, name, opt, func(d *Decision, opt largo.CreateOptions) (largo.Upload, error) {
		if !ok {
			return nil, fmt.Errorf("adopt: %w", largo.ErrUnsupported)
		}
		return a.Adopt(ctx, d.Physical, staged, opt)
	})
}

// AdoptAssembly implements largo.AssemblyAdopter: a write of name, as
// Adopt's.
func (s *Store) AdoptAssembly(ctx context.Context, name, id string, opt largo.CreateOptions) (largo.Upload, error) {
	a, ok := s.inner.(largo.AssemblyAdopter)
	return s.write(ctx, name, opt, func(d *Decision, opt largo.CreateOptions) (largo.Upload, error) {
		if !ok {
			return nil, fmt.Errorf("adopt an assembly: %w", largo.ErrUnsupported)
		}
		return a.AdoptAssembly(ctx, d.Physical, id, opt)
	})
}

// Copy implements largo.Copier: read of src, write of name.
func (s *Store) Copy(ctx context.Context, name, src string, opt largo.CreateOptions) (largo.Upload, error) {
	cp, ok := s.inner.(largo.Copier)
	var u largo.Upload
	err := s.g.act2(ctx, OpRead, src, false, OpWrite, name, false, func(sd, d *Decision) (err error) {
		if err := s.sidecarName(ctx, d); err != nil {
			return err
		}
		u, err = s.g.upload(d, opt, func(d *Decision, opt largo.CreateOptions) (largo.Upload, error) {
			if !ok {
				return nil, fmt.Errorf("copy: %w", largo.ErrUnsupported)
			}
			return cp.Copy(ctx, d.Physical, sd.Physical, opt)
		})
		return err
	})
	return u, err
}

// notDrop refuses what a drop box may not do, though it writes: anything
// but creating a file.
func notDrop(d *Decision) error {
	if d.DropBox() {
		return fmt.Errorf("%s: %w: %w", d.Name, largo.ErrCreateOnly, largo.ErrPermission)
	}
	return nil
}

// Remove implements largo.Remover: delete on the name, and below it for
// a recursive removal. A link is removed, never what it leads to.
func (s *Store) Remove(ctx context.Context, name string, opt largo.RemoveOptions) error {
	rm, ok := s.inner.(largo.Remover)
	return s.g.act(ctx, OpDelete, name, opt.Recursive, func(d *Decision) error {
		if !ok {
			return fmt.Errorf("remove: %w", largo.ErrUnsupported)
		}
		return rm.Remove(ctx, d.Physical, opt)
	})
}

// MakeDir implements largo.DirMaker: write on the name; a drop box
// makes no folder.
func (s *Store) MakeDir(ctx context.Context, name string) error {
	dm, ok := s.inner.(largo.DirMaker)
	return s.g.act(ctx, OpWrite, name, false, func(d *Decision) error {
		if err := notDrop(d); err != nil {
			return err
		}
		if err := largo.CheckNew(name); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("make folder: %w", largo.ErrUnsupported)
		}
		return dm.MakeDir(ctx, d.Physical)
	})
}

// Rename implements largo.Renamer: read and delete on from and all below
// it, write on to and all below it. A link at from is moved, never what
// it leads to.
func (s *Store) Rename(ctx context.Context, from, to string) error {
	rn, ok := s.inner.(largo.Renamer)
	return s.g.act2(ctx, OpMove, from, true, OpWrite, to, true, func(fd, td *Decision) error {
		if err := notDrop(td); err != nil {
			return err
		}
		if err := largo.CheckNew(to); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("rename: %w", largo.ErrUnsupported)
		}
		return rn.Rename(ctx, fd.Physical, td.Physical)
	})
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

// MoveNeeds is what a move of a file or a folder of s needs of its
// source, for a front end to ask Check before it moves anything: read
// and delete on all of it, and list too for a folder that s cannot
// rename, which is moved by copies of its listed entries.
func MoveNeeds(s largo.Store, dir bool) auth.Perm {
	if dir && !Has[largo.Renamer](s) {
		return auth.Read | auth.Delete | auth.List
	}
	return auth.Read | auth.Delete
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
	if !u.createOnly {
		return u.Upload.Commit(ctx, cond)
	}
	in, ok, err := u.Upload.Commit(ctx, largo.Condition{IfNoneMatch: true})
	if errors.Is(err, largo.ErrPrecondition) && !errors.Is(err, largo.ErrNameTaken) {
		err = nameTaken(in.Name, err)
	}
	return in, ok, err
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

// named returns f, opened under a physical name, with in (the metadata
// under the name as spelled) as its metadata, keeping its operating-
// system file, or its slices, for sendfile.
func named(f largo.File, in largo.Info) largo.File {
	n := namedFile{File: f, info: in}
	if of, ok := f.(largo.OSFile); ok {
		return &namedOSFile{namedFile: n, of: of}
	}
	if sf, ok := f.(largo.SliceFile); ok {
		return &namedSliceFile{namedFile: n, sf: sf}
	}
	return &n
}

type namedFile struct {
	largo.File
	info largo.Info
}

func (f *namedFile) Info() largo.Info { return f.info }

type namedOSFile struct {
	namedFile
	of largo.OSFile
}

func (f *namedOSFile) OSFile() *os.File { return f.of.OSFile() }

type namedSliceFile struct {
	namedFile
	sf largo.SliceFile
}

func (f *namedSliceFile) Slice() (*os.File, error) { return f.sf.Slice() }
