package pageapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/wire"
)

// The folder page manages files through the routes of this file, which
// do what WebDAV's MOVE and MKCOL do, without --webdav: a move (or a
// rename, a move within one folder) and a new folder, each a store
// operation through the gated store with the write pipeline's checks
// (names, locks), same-origin checked like every write, and answered
// with the one status table. A removal is the file tree's own DELETE.
// MayPath tells the page which of these its visitor may do on given
// names, as the gate decides, so that it shows only those.

// MovePath is where a file or a folder is moved or renamed: POST with the
// form fields from and to, the URL paths of the source and of its new
// name (such as /a/b.txt and /c/b.txt). An If-Match header holding the
// ETag the page listed makes sure a file is moved only as it was (412
// otherwise). Nothing is replaced: a name that exists at to is a 409. On
// a store that renames (a folder) the move is one atomic rename; on a
// bucket, each file is copied then removed (ingest.Pipeline.MoveByCopy).
// The answer is 201 with the new URL path in Location and in the JSON
// body {"path": ...}.
const MovePath = prefix + "move"

// MkdirPath is where a folder is made: POST with the form field path, the
// folder's URL path. 201 with its URL path, as MovePath answers; 409
// when something is there, or when its parent folder is missing.
const MkdirPath = prefix + "mkdir"

// MayPath answers what the requester may do with some names: GET or POST
// with the field path, repeated (URL paths; a folder's ends with a
// slash), at most maxMayPaths of them. The answer is a JSON object
// mapping each path to the actions the gate lets through: "delete",
// "move" (to a folder where the requester may write), "rename" (within
// its folder), "share" (a link that reads it, for a signed-in user), and
// for a folder "write" (new files or folders in it) and "drop" (a
// drop-box link to it, which needs write alone). It asks nothing of the
// store: a name that does not exist answers what its rules allow.
const MayPath = prefix + "may"

// maxManageForm bounds the form of a move or a new folder: two names of
// at most largo.MaxNameLen bytes, percent-encoded.
const maxManageForm = 8 * largo.MaxNameLen

// maxMayPaths bounds the names of one MayPath request, and maxMayForm
// its body.
const (
	maxMayPaths = 1000
	maxMayForm  = 1 << 20
)

// formName reads the form field key as a URL path and returns its store
// name; a path under the reserved prefix or a hidden one is refused.
func formName(r *http.Request, key string) (string, error) {
	v := r.Form.Get(key)
	if v == "" {
		return "", wire.Refuse(http.StatusBadRequest, key+": missing")
	}
	return pathName(v, key)
}

// made answers a move or a new folder: 201, and where the name is now.
func made(w http.ResponseWriter, name string, dir bool) error {
	loc := urlPath(name, dir)
	w.Header().Set("Location", loc)
	return writeJSON(w, http.StatusCreated, map[string]string{"path": loc})
}

var (
	errSameName   = wire.Refuse(http.StatusBadRequest, "to: the name it already has")
	errMoveInto   = wire.Refuse(http.StatusForbidden, "cannot move into itself: the destination is below what is moved")
	errMoveIfNone = wire.Refuse(http.StatusBadRequest, "If-None-Match: a move only takes If-Match")
)

// move moves or renames a file or a folder (MovePath). The gate is asked
// first for all of it, the source and all below it (read and delete) and
// the destination and all below it (write), so that a move by copies
// never stops half-way for want of a permission; the store's calls are
// decided again, one by one.
func (a *API) move(w http.ResponseWriter, r *http.Request) error {
	if err := a.sameOrigin(r); err != nil {
		return err
	}
	cond, err := wire.Condition(r.Header)
	if err != nil {
		return err
	}
	if cond.IfNoneMatch {
		return errMoveIfNone
	}
	if err := readForm(w, r, maxManageForm); err != nil {
		return err
	}
	from, err := formName(r, "from")
	if err != nil {
		return err
	}
	to, err := formName(r, "to")
	if err != nil {
		return err
	}
	for _, n := range []string{from, to} {
		if err := ingest.CheckName(n); err != nil {
			return err
		}
	}
	switch {
	case from == to:
		return errSameName
	case largo.Within(from, to):
		return errMoveInto
	}
	ctx := r.Context()
	store, pl := a.cfg.Store, a.cfg.Writes
	in, err := store.Stat(ctx, from)
	if err != nil {
		return err
	}
	if err := a.gate.Check(ctx, gate.MoveNeeds(store, in.IsDir), from, in.IsDir); err != nil {
		return err
	}
	if err := a.gate.Check(ctx, auth.Write, to, in.IsDir); err != nil {
		return err
	}
	if err := cond.Check(from, in, true); err != nil {
		return err
	}
	if err := a.freeName(r, to); err != nil {
		return err
	}
	if _, err := pl.CheckRemove(ctx, from, largo.Condition{}, nil); err != nil {
		return err
	}
	if err := pl.CheckLock(ctx, to, true, nil); err != nil {
		return err
	}
	if err := pl.CheckMove(ctx, from, to); err != nil {
		return err
	}
	err = store.(largo.Renamer).Rename(ctx, from, to) // a *gate.Store renames, or says it cannot
	switch {
	case errors.Is(err, largo.ErrUnsupported):
		err = pl.MoveByCopy(ctx, store, from, to, nil) // the copies carry the digests
	case err == nil:
		pl.Renamed(ctx, from, to) // the digests go along
	}
	if err != nil {
		return err
	}
	pl.Forget(ctx, from)
	return made(w, to, in.IsDir)
}

// freeName checks that nothing is at name and that its folder is one: a
// move or a new folder replaces nothing, and makes no folders on the way.
func (a *API) freeName(r *http.Request, name string) error {
	ctx := r.Context()
	switch _, err := a.cfg.Store.Stat(ctx, name); {
	case err == nil:
		return fmt.Errorf("%s: %w", name, largo.ErrExist)
	case !errors.Is(err, largo.ErrNotFound):
		return err
	}
	return largo.CheckParent(ctx, a.cfg.Store, name)
}

// makeDir makes a folder (MkdirPath) through the gated store: write on
// its name, which must be free, in a folder that exists, with room for
// one file in the files quotas it falls under (a folder made counts as
// one).
func (a *API) makeDir(w http.ResponseWriter, r *http.Request) error {
	if err := a.sameOrigin(r); err != nil {
		return err
	}
	if err := readForm(w, r, maxManageForm); err != nil {
		return err
	}
	name, err := formName(r, "path")
	if err != nil {
		return err
	}
	if err := ingest.CheckName(name); err != nil {
		return err
	}
	ctx := r.Context()
	if err := a.gate.Check(ctx, auth.Write, name, false); err != nil {
		return err
	}
	if err := a.freeName(r, name); err != nil {
		return err
	}
	if err := a.cfg.Writes.CheckLock(ctx, name, false, nil); err != nil {
		return err
	}
	if err := a.cfg.Writes.CheckFolder(ctx, name); err != nil {
		return err
	}
	if err := a.cfg.Store.(largo.DirMaker).MakeDir(ctx, name); err != nil {
		return err
	}
	a.cfg.Writes.FolderMade(ctx, name)
	return made(w, name, true)
}

// may answers MayPath: the actions the gate lets the requester do on
// each name, asking it exactly what the action's request will need
// (the tree below a folder included), never the store.
func (a *API) may(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxMayForm); err != nil {
		return err
	}
	paths := r.Form["path"]
	if len(paths) > maxMayPaths {
		return wire.Refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("at most %d paths at once", maxMayPaths))
	}
	out := make(map[string][]string, len(paths))
	for _, p := range paths {
		dir := strings.HasSuffix(p, "/")
		name, err := largo.ParseName("/" + strings.TrimPrefix(p, "/"))
		if err != nil {
			return wire.Refuse(http.StatusBadRequest, "path: not a path this server serves")
		}
		out[p] = a.actions(r, name, dir || name == "")
	}
	return writeJSON(w, http.StatusOK, out)
}

// actions lists what the requester may do on name (see MayPath).
func (a *API) actions(r *http.Request, name string, dir bool) []string {
	ctx := r.Context()
	allows := func(perm auth.Perm, name string, tree bool) bool {
		return a.gate.Check(ctx, perm, name, tree) == nil
	}
	acts := []string{}
	p := principal(r)
	if p.LinkID() != "" || largo.Reserved(name) {
		return acts // the page of a share link manages nothing
	}
	writes := a.cfg.Writes != nil
	movable := writes && name != "" && ingest.CheckName(name) == nil
	if writes && name != "" && allows(auth.Delete, name, dir) {
		acts = append(acts, "delete")
	}
	if movable && allows(auth.Read|auth.Delete, name, dir) {
		acts = append(acts, "move")
		if allows(auth.Write, largo.Join(largo.Parent(name), gate.NewName), false) {
			acts = append(acts, "rename")
		}
	}
	share := a.gate.Links() != nil && p.UserName() != ""
	if share && (dir && allows(auth.Read|auth.List, name, true) || !dir && allows(auth.Read, name, false)) {
		acts = append(acts, "share")
	}
	if dir && writes && allows(auth.Write, largo.Join(name, gate.NewName), false) {
		acts = append(acts, "write")
		if share && ingest.CheckName(name) == nil {
			acts = append(acts, "drop")
		}
	}
	return acts
}
