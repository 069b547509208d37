package gate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"largo"
	"largo/auth"
)

// LinkKind is what a share link grants.
type LinkKind string

// The kinds of share link.
const (
	// LinkFile reads one file.
	LinkFile LinkKind = "file"
	// LinkFolder reads and lists a folder and everything below it.
	LinkFolder LinkKind = "folder"
	// LinkDrop is a drop box: it creates new files directly in its
	// folder, and never reads, lists or replaces anything.
	LinkDrop LinkKind = "drop"
)

// Link is a share link's record: what it grants, to whom it answers, and
// until when. It is kept in the store's state area under "links/ID".
type Link struct {
	// ID names the link; its token is signed over it.
	ID string `json:"id"`
	// Kind is what it grants.
	Kind LinkKind `json:"kind"`
	// Path is the shared name: the file, or the folder ("" for the root).
	Path string `json:"path"`
	// Maker is the user who made it, whose rights bound it; "" for a
	// link the operator made on the command line without naming a user,
	// which is bounded by its scope alone.
	Maker string `json:"maker,omitempty"`
	// Created and Expires are when it was made and when it stops working.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Password is what is kept of the link's password (auth.PasswordMAC),
	// "" for a link without one.
	Password string `json:"password,omitempty"`
	// MaxUpload, for a drop box, is the largest file it takes, in bytes;
	// zero means the server's default for links (Config.LinkMaxUpload).
	MaxUpload int64 `json:"max_upload,omitempty"`
	// MaxRate is the link's bandwidth cap, in bytes per second each way,
	// shared by every transfer through it; zero means the server's
	// default for links. Where the server has a default, the lower of
	// the two governs: a link cannot lift its server's cap.
	MaxRate int64 `json:"max_rate,omitempty"`
	// FileTTL, for a drop box, is how long each file that lands through
	// it is kept, in seconds; zero keeps them (package expiry).
	FileTTL int64 `json:"file_ttl,omitempty"`
	// MaxDownloads, for a file link, is how many complete downloads it
	// gives before it answers 410 Gone; zero means no limit (package
	// expiry counts them).
	MaxDownloads int64 `json:"max_downloads,omitempty"`
}

// grants returns the permissions l's scope gives on name, before its
// maker's rights: a folder link reads and lists its folder and what is
// below; a file link reads its file (and the sidecars of its file, which
// hold its bytes); a drop box writes names directly in its folder. With
// any set, any of them is enough (a look at a name).
func (l *Link) grants(name string) auth.Perm {
	switch l.Kind {
	case LinkFolder:
		if largo.Within(l.Path, name) {
			return auth.Read | auth.List
		}
	case LinkFile:
		if name == l.Path {
			return auth.Read
		}
		if base, _, ok := largo.SidecarBase(name); ok && base == l.Path {
			return auth.Read
		}
	case LinkDrop:
		if name != l.Path && parent(name) == l.Path {
			return auth.Write
		}
	}
	return 0
}

// URLPath returns the path of the link with token: below
// auth.SharePrefix, a folder's ends with a slash, a file's with its
// name, so that a download keeps it.
func (l *Link) URLPath(token string) string {
	if l.Kind == LinkFile {
		return auth.SharePrefix + token + "/" + escapeElem(path.Base(l.Path))
	}
	return auth.SharePrefix + token + "/"
}

// Within returns the store name a link's request names: rest, the part
// of the URL path after the token (a name that passed largo.ParseName),
// below the shared folder; for a file, rest is empty or the file's own
// name, and ok is false for anything else.
func (l *Link) Within(rest string) (name string, ok bool) {
	switch {
	case l.Kind == LinkFile:
		return l.Path, rest == "" || rest == path.Base(l.Path)
	case rest == "":
		return l.Path, true
	}
	return largo.Join(l.Path, rest), true
}

// Links keeps the records of share links in a store's state area, with
// a short cache in front, so that a request through a link costs a
// record's read at most once per LinkCacheTTL. Every instance serving
// the store reads the same records: a link revoked or extended on one
// is revoked or extended on all within LinkCacheTTL (at once on the
// instance that did it). A Links is safe for concurrent use.
type Links struct {
	state largo.State
	key   []byte
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cachedLink
}

type cachedLink struct {
	link *Link // nil: no such record
	at   time.Time
}

// LinkCacheTTL is how long a link's record, or its absence, is taken
// from memory before it is read again.
const LinkCacheTTL = 5 * time.Second

const (
	linkPrefix   = "links/"
	linkCacheMax = 4096
)

// ErrNoLinks: share links are off (no key, or no state area to keep
// their records in).
var ErrNoLinks = errors.New("share links are off on this server")

// NewLinks returns the links kept in state and signed with key. now is
// the clock; nil means time.Now.
func NewLinks(state largo.State, key []byte, now func() time.Time) *Links {
	if now == nil {
		now = time.Now
	}
	return &Links{state: state, key: key, now: now, cache: map[string]cachedLink{}}
}

// ErrShortPassword refuses a link's password shorter than
// auth.MinLinkPassword.
var ErrShortPassword = fmt.Errorf("a share link's password needs at least %d characters", auth.MinLinkPassword)

// Make records l (its ID, Created and Password are set here) and returns
// its token. password is the link's password, empty for none.
func (ls *Links) Make(ctx context.Context, l Link, password string) (string, Link, error) {
	if ls == nil {
		return "", l, ErrNoLinks
	}
	if password != "" && len([]rune(password)) < auth.MinLinkPassword {
		return "", l, ErrShortPassword
	}
	l.ID = auth.NewLinkID()
	l.Created = ls.now().UTC().Truncate(time.Second)
	l.Expires = l.Expires.UTC().Truncate(time.Second)
	l.Password = ""
	if password != "" {
		l.Password = auth.PasswordMAC(ls.key, l.ID, password)
	}
	if err := ls.put(ctx, &l); err != nil {
		return "", l, err
	}
	return ls.Token(&l), l, nil
}

// Token returns the token of the link l.
func (ls *Links) Token(l *Link) string { return auth.SignLink(ls.key, l.ID) }

func (ls *Links) put(ctx context.Context, l *Link) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := ls.state.Put(ctx, linkPrefix+l.ID, b); err != nil {
		return err
	}
	ls.remember(l.ID, l)
	return nil
}

// Verify checks a link's token and the password the request carried,
// and returns the link's record: auth's errors for a changed token, an
// old format or a wrong password, ErrShareRevoked when its record is gone,
// ErrShareExpired after it expired.
func (ls *Links) Verify(ctx context.Context, token, password string) (*Link, error) {
	if ls == nil {
		return nil, ErrNoLinks
	}
	id, err := auth.VerifyLink(ls.key, token)
	if err != nil {
		return nil, err
	}
	l, err := ls.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Password == "":
	case password == "":
		return nil, auth.ErrSharePassword
	case !auth.CheckPassword(ls.key, l.ID, password, l.Password):
		return nil, fmt.Errorf("%w: that is not it", auth.ErrSharePassword)
	}
	if !ls.now().Before(l.Expires) {
		return nil, auth.ErrShareExpired
	}
	return l, nil
}

// Get returns the record of the link id, from the cache when it is
// recent: ErrShareRevoked when there is none.
func (ls *Links) Get(ctx context.Context, id string) (*Link, error) {
	if ls == nil {
		return nil, ErrNoLinks
	}
	if !validID(id) {
		return nil, auth.ErrShareInvalid
	}
	now := ls.now()
	ls.mu.Lock()
	c, hit := ls.cache[id]
	ls.mu.Unlock()
	if !hit || now.Sub(c.at) >= LinkCacheTTL || now.Before(c.at) {
		b, err := ls.state.Get(ctx, linkPrefix+id)
		switch {
		case errors.Is(err, largo.ErrNotFound):
			c.link = nil
		case err != nil:
			return nil, err
		default:
			c.link = new(Link)
			if err := json.Unmarshal(b, c.link); err != nil || c.link.ID != id {
				return nil, fmt.Errorf("link record %s: unreadable", id)
			}
		}
		ls.remember(id, c.link)
	}
	if c.link == nil {
		return nil, auth.ErrShareRevoked
	}
	return c.link, nil
}

func (ls *Links) remember(id string, l *Link) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.cache) >= linkCacheMax {
		clear(ls.cache)
	}
	ls.cache[id] = cachedLink{link: l, at: ls.now()}
}

// List returns the links maker made, or with all every link, newest
// first; expired links are listed until they are revoked.
func (ls *Links) List(ctx context.Context, maker string, all bool) ([]Link, error) {
	if ls == nil {
		return nil, ErrNoLinks
	}
	var out []Link
	for rec, err := range ls.state.List(ctx, linkPrefix) {
		if err != nil {
			return nil, err
		}
		id := strings.TrimPrefix(rec.Key, linkPrefix)
		l, err := ls.Get(ctx, id)
		if err != nil {
			continue // revoked meanwhile, or unreadable
		}
		if all || l.Maker == maker {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Revoke removes the link id's record, so that it stops working: at once
// here, within LinkCacheTTL on other instances. Only its maker may
// (maker "" with all: the operator, any link).
func (ls *Links) Revoke(ctx context.Context, id, maker string, all bool) error {
	l, err := ls.owned(ctx, id, maker, all)
	if err != nil {
		return err
	}
	if err := ls.state.Delete(ctx, linkPrefix+l.ID); err != nil {
		return err
	}
	ls.remember(l.ID, nil)
	return nil
}

// Extend sets a new expiry on the link id. Only its maker may (maker ""
// with all: the operator, any link).
func (ls *Links) Extend(ctx context.Context, id, maker string, all bool, until time.Time) (Link, error) {
	l, err := ls.owned(ctx, id, maker, all)
	if err != nil {
		return Link{}, err
	}
	nl := *l
	nl.Expires = until.UTC().Truncate(time.Second)
	return nl, ls.put(ctx, &nl)
}

func (ls *Links) owned(ctx context.Context, id, maker string, all bool) (*Link, error) {
	if ls == nil {
		return nil, ErrNoLinks
	}
	if !validID(id) {
		return nil, fmt.Errorf("link %q: %w", id, largo.ErrNotFound)
	}
	l, err := ls.Get(ctx, id)
	if err != nil || !all && l.Maker != maker {
		return nil, fmt.Errorf("link %q: %w", id, largo.ErrNotFound)
	}
	return l, nil
}

// parent returns the folder of a name: "a/b" for "a/b/c", "" for "c".
func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// validID reports whether id has the form of a link's ID (so that it
// can name no other record).
func validID(id string) bool {
	b, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(b) == 16
}

// escapeElem escapes a name's element for a URL path.
func escapeElem(elem string) string {
	return (&url.URL{Path: elem}).EscapedPath()
}
