// Package links keeps share links: their records, their tokens, their
// passwords, their download counts and the share key, all in a store's
// state area, which every instance serving the store reads.
//
// A share link is a bearer capability to one scope (a file, a folder and
// what is below it, or a drop box), granted by its maker. Its record
// ("links/ID", JSON) holds the scope, the maker, the expiry, what is kept
// of its password and its limits, so that a link can be listed, revoked
// and extended on its own; its token holds only the link's ID and an
// HMAC-SHA256 of it under the share key (token.go). A link's password is
// kept in its record as an HMAC under the same key, so that the record
// alone does not give it away.
//
// The share key is given (Config.Key: the access file's, or
// --share-key-file's), or kept in the state area ("share.key"), where it
// is made with the first link (Make), written only where none is
// (largo.StateCreator), so that two makers at once agree on one key. A
// Links that knows no key looks for it when a token is to be checked,
// at most once per CacheTTL: a key made beside a running server (by
// largo share, or by another instance) is found at the next request
// through a link, or within CacheTTL of the last look that found none.
// Links made beside it are found at once: a link's record is read the
// first time its ID is met.
//
// A file link may give only so many downloads; their count is a record
// of its own ("downloads/ID", downloads.go). Sweep removes the records
// of links that expired more than Config.Grace ago and the counts of
// links that are gone.
//
// Nothing here decides access: package gate reads a link's record (Get)
// and judges what its holder may do, under its maker's rights; the HTTP
// front end only routes to these methods.
//
// A Links is safe for concurrent use.
package links

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"sync"
	"time"

	"largo"
	"largo/record"
)

// Kind is what a share link grants.
type Kind string

// The kinds of share link.
const (
	// File reads one file.
	File Kind = "file"
	// Folder reads and lists a folder and everything below it.
	Folder Kind = "folder"
	// Drop is a drop box: it creates new files directly in its folder,
	// and never reads, lists or replaces anything.
	Drop Kind = "drop"
)

// Link is a share link's record: what it grants, to whom it answers, and
// until when. It is kept in the store's state area under "links/ID".
type Link struct {
	// ID names the link; its token is signed over it.
	ID string `json:"id"`
	// Kind is what it grants.
	Kind Kind `json:"kind"`
	// Path is the shared name: the file, or the folder ("" for the root).
	Path string `json:"path"`
	// Maker is the user who made it, whose rights bound it; "" for a
	// link the operator made on the command line without naming a user,
	// which is bounded by its scope alone.
	Maker string `json:"maker,omitempty"`
	// Created and Expires are when it was made and when it stops working.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Password is what is kept of the link's password (an HMAC under the
	// share key), "" for a link without one.
	Password string `json:"password,omitempty"`
	// MaxUpload, for a drop box, is the largest file it takes, in bytes;
	// zero means the server's default for links (UploadCap).
	MaxUpload int64 `json:"max_upload,omitempty"`
	// MaxRate is the link's bandwidth cap, in bytes per second each way,
	// shared by every transfer through it; zero means the server's
	// default for links. Where the server has a default, the lower of
	// the two governs: a link cannot lift its server's cap (Rate).
	MaxRate int64 `json:"max_rate,omitempty"`
	// FileTTL, for a drop box, is how long each file that lands through
	// it is kept, in seconds; zero keeps them (package expiry).
	FileTTL int64 `json:"file_ttl,omitempty"`
	// MaxDownloads, for a file link, is how many complete downloads it
	// gives before it answers 410 Gone; zero means no limit (Begin
	// counts them).
	MaxDownloads int64 `json:"max_downloads,omitempty"`
}

// URLPrefix is where share links live: URLPrefix, the token, a slash,
// then the shared name, or a name below a shared folder.
const URLPrefix = "/_largo/s/"

// URLPath returns the path of the link with token: below URLPrefix, a
// folder's ends with a slash, a file's with its name, so that a download
// keeps it.
func (l *Link) URLPath(token string) string {
	if l.Kind == File {
		return URLPrefix + token + "/" + (&url.URL{Path: path.Base(l.Path)}).EscapedPath()
	}
	return URLPrefix + token + "/"
}

// Within returns the store name a link's request names: rest, the part
// of the URL path after the token (a name that passed largo.ParseName),
// below the shared folder; for a file, rest is empty or the file's own
// name, and ok is false for anything else.
func (l *Link) Within(rest string) (name string, ok bool) {
	switch {
	case l.Kind == File:
		return l.Path, rest == "" || rest == path.Base(l.Path)
	case rest == "":
		return l.Path, true
	}
	return largo.Join(l.Path, rest), true
}

// Rate returns the link's bandwidth cap under a server whose default
// for links is def: the lower of the two, zero meaning none.
func (l *Link) Rate(def int64) int64 { return lower(def, l.MaxRate) }

// UploadCap returns the largest file a drop box takes under a server
// whose cap for links is def: the lower of the two, zero meaning none.
func (l *Link) UploadCap(def int64) int64 { return lower(def, l.MaxUpload) }

// lower returns the lower of two caps, zero meaning none.
func lower(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Config configures a Links. State is required.
type Config struct {
	// State is the state area the records and the key are kept in.
	State largo.State
	// Key is the share key when it is given (the access file's,
	// --share-key-file's); nil means the one kept in State, made with
	// the first link.
	Key []byte
	// Grace is how long the record of an expired link is kept (listed,
	// and extended if its maker wants) before Sweep removes it; zero
	// means DefaultGrace.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultGrace is how long an expired link's record is kept by default.
const DefaultGrace = 30 * 24 * time.Hour

// CacheTTL is how long a link's record, or its absence, and the absence
// of a share key, are taken from memory before they are read again.
const CacheTTL = 5 * time.Second

const (
	linkPrefix = "links/"
	// cacheMax bounds the links' records (and absences) kept in memory:
	// past it, the least recently used is forgotten.
	cacheMax = 4096
)

// Links keeps the share links of one state area, with a short cache of
// their records in front (a record.Table's), so that a request through a
// link costs a record's read at most once per CacheTTL: a link revoked or
// extended on one instance is revoked or extended on all within CacheTTL
// (at once on the instance that did it). Create one with New; a nil
// *Links has links off: its methods answer ErrOff (Load and Sweep have
// nothing to do).
type Links struct {
	cfg Config

	keyMu      sync.Mutex
	key        []byte    // the share key, once known
	noKeySince time.Time // when the state area was last found without one

	links  *record.Table[Link]  // by ID, cached for CacheTTL
	counts *record.Table[Count] // download counts, by ID (downloads.go)

	downMu   sync.Mutex
	inflight map[string]int64 // link ID -> bytes admitted and not yet counted
}

// Errors of links. Those of a link's holder (Invalid, Old, Revoked,
// Expired, Password) are answered with their text.
var (
	// ErrOff: no state area to keep links in.
	ErrOff = errors.New("share links are off on this server")
	// ErrShortPassword refuses a link's password shorter than
	// MinPassword.
	ErrShortPassword = fmt.Errorf("a share link's password needs at least %d characters", MinPassword)
	// ErrInvalid: a token changed, or signed by another key.
	ErrInvalid = errors.New("invalid share link")
	// ErrExpired: the link's time is up.
	ErrExpired = errors.New("share link expired")
	// ErrRevoked: the link has no record (revoked, or swept).
	ErrRevoked = errors.New("share link revoked")
	// ErrPassword: the link's password is missing or wrong.
	ErrPassword = errors.New("share link needs its password")
	// ErrOld: a token of the first format.
	ErrOld = errors.New("share link of a format this server no longer accepts (made before links answered to their maker): ask for a new one")
)

// MinPassword is the fewest characters a share link's password may have,
// wherever the link is made.
const MinPassword = 8

// New returns the links of cfg.
func New(cfg Config) *Links {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	rs := record.New(cfg.State, record.Options{Now: cfg.Now})
	return &Links{cfg: cfg, inflight: map[string]int64{},
		links:  record.NewTable[Link](rs, linkPrefix, record.TableOptions{CacheSize: cacheMax, TTL: CacheTTL, NegativeTTL: CacheTTL}),
		counts: record.NewTable[Count](rs, downloadPrefix, record.TableOptions{}),
	}
}

// Make records l (its ID, Created and Password are set here) and returns
// its token and its record; password is the link's password, empty for
// none. The share key is made here if the state area holds none yet.
func (ls *Links) Make(ctx context.Context, l Link, password string) (string, Link, error) {
	if ls == nil {
		return "", l, ErrOff
	}
	if password != "" && len([]rune(password)) < MinPassword {
		return "", l, ErrShortPassword
	}
	key, err := ls.shareKey(ctx, makeKey)
	if err != nil {
		return "", l, err
	}
	l.ID = newID()
	l.Created = ls.cfg.Now().UTC().Truncate(time.Second)
	l.Expires = l.Expires.UTC().Truncate(time.Second)
	l.Password = ""
	if password != "" {
		l.Password = passwordMAC(key, l.ID, password)
	}
	if err := ls.put(ctx, &l); err != nil {
		return "", l, err
	}
	return sign(key, l.ID), l, nil
}

func (ls *Links) put(ctx context.Context, l *Link) error {
	return ls.links.Put(ctx, l.ID, *l)
}

// Token returns the token of the link l: ErrNoKey when the state area
// holds no share key (l is no link made here).
func (ls *Links) Token(ctx context.Context, l *Link) (string, error) {
	if ls == nil {
		return "", ErrOff
	}
	key, err := ls.shareKey(ctx, readKey)
	if err != nil {
		return "", err
	}
	return sign(key, l.ID), nil
}

// Verify checks a link's token and the password the request carried,
// and returns the link's record: ErrInvalid for a changed token (or
// ErrNoKey when no key signs any yet), ErrOld for the first format,
// ErrPassword for a missing or wrong password, ErrRevoked when its
// record is gone, ErrExpired after it expired.
func (ls *Links) Verify(ctx context.Context, token, password string) (*Link, error) {
	if ls == nil {
		return nil, ErrOff
	}
	id, err := ID(token)
	if err != nil {
		return nil, err
	}
	key, err := ls.shareKey(ctx, checkKey)
	if err != nil {
		return nil, err
	}
	if !signedBy(key, token, id) {
		return nil, ErrInvalid
	}
	l, err := ls.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Password == "":
	case password == "":
		return nil, ErrPassword
	case !checkPassword(key, l.ID, password, l.Password):
		return nil, fmt.Errorf("%w: that is not it", ErrPassword)
	}
	if !ls.cfg.Now().Before(l.Expires) {
		return nil, ErrExpired
	}
	return l, nil
}

// Get returns the record of the link id, from the cache when it is
// recent: ErrRevoked when there is none.
func (ls *Links) Get(ctx context.Context, id string) (*Link, error) {
	if ls == nil {
		return nil, ErrOff
	}
	if !validID(id) {
		return nil, ErrInvalid
	}
	l, err := ls.links.Get(ctx, id)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return nil, ErrRevoked
	case err != nil:
		return nil, err
	case l.ID != id:
		return nil, fmt.Errorf("link record %s: unreadable", id)
	}
	return &l, nil
}

// List returns the links maker made, or with all every link, newest
// first; an expired link is listed until Sweep removes it.
func (ls *Links) List(ctx context.Context, maker string, all bool) ([]Link, error) {
	if ls == nil {
		return nil, ErrOff
	}
	var out []Link
	for rec, err := range ls.links.Keys(ctx) {
		if err != nil {
			return nil, err
		}
		l, err := ls.Get(ctx, rec.Key)
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

// Revoke removes the link id's record and its download count, so that
// it stops working: at once here, within CacheTTL on other instances.
// Only its maker may (maker "" with all: the operator, any link).
func (ls *Links) Revoke(ctx context.Context, id, maker string, all bool) error {
	l, err := ls.owned(ctx, id, maker, all)
	if err != nil {
		return err
	}
	if err := ls.links.Delete(ctx, l.ID); err != nil {
		return err
	}
	return ls.counts.Delete(ctx, l.ID)
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
		return nil, ErrOff
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

// validID reports whether id has the form of a link's ID (so that it
// can name no other record).
func validID(id string) bool {
	b, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(b) == idBytes
}
