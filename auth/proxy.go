package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"largo/internal/lru"
)

// A proxy in front of the server (nginx, Caddy, Traefik, an identity
// proxy such as Authelia, Authentik or oauth2-proxy) makes every request
// come from its own address, and may have signed its user in. Proxies
// says which peers are such proxies, and Resolve makes a request from one
// of them what its client sent: the client's address read from the
// field the proxy appends to, and the user the proxy names. From any
// other peer, nothing of those fields is believed.
//
// A request's peer is its RemoteAddr as the listener gave it: the
// connection's source, or the address a PROXY protocol header named
// (package limit reads those headers, from trusted proxies only). A TCP
// proxy that sends a PROXY header passes its client's bytes unchanged,
// so its client's fields are believed only when that client is itself a
// trusted proxy.

// The fields a proxy tells the client's address in.
const (
	// XForwardedFor is X-Forwarded-For: a list of addresses, each proxy
	// appending the address it was reached from.
	XForwardedFor = "X-Forwarded-For"
	// Forwarded is RFC 7239's field, whose for= parameters list the
	// same.
	Forwarded = "Forwarded"
)

// ProxyConfig is what a server is told of the proxies in front of it.
// The zero value trusts none.
type ProxyConfig struct {
	// Trusted are the networks of the trusted proxies.
	Trusted []netip.Prefix
	// Forwarded is the field the client's address is read from:
	// XForwardedFor (also when empty) or Forwarded. The proxy must append
	// to it (or set it), as nginx's $proxy_add_x_forwarded_for, Caddy and
	// Traefik do to X-Forwarded-For: a field it passes through untouched
	// holds whatever the client wrote.
	Forwarded string
	// User is the field in which a proxy names the user it signed in
	// (Remote-User); empty takes no user from a field.
	User string
	// Groups is the field in which it lists that user's groups
	// (Remote-Groups), separated by commas or bars; empty takes none.
	Groups string
}

// Proxies believes what trusted proxies say of their clients (see
// ProxyConfig). It is safe for concurrent use.
type Proxies struct {
	trusted   []netip.Prefix
	forwarded string // canonical
	user      string // canonical, "" for none
	groups    string // canonical, "" for none
	// fields are the fields taken away from a request of any other peer.
	fields []string
}

// NewProxies checks cfg and returns its Proxies.
func NewProxies(cfg ProxyConfig) (*Proxies, error) {
	p := &Proxies{trusted: slices.Clone(cfg.Trusted)}
	switch f := http.CanonicalHeaderKey(cfg.Forwarded); f {
	case "", XForwardedFor:
		p.forwarded = XForwardedFor
	case Forwarded:
		p.forwarded = Forwarded
	default:
		return nil, fmt.Errorf("the client's address is read from %s or %s, not %s", XForwardedFor, Forwarded, cfg.Forwarded)
	}
	for _, f := range []struct {
		to   *string
		name string
	}{{&p.user, cfg.User}, {&p.groups, cfg.Groups}} {
		if f.name == "" {
			continue
		}
		if !fieldName(f.name) {
			return nil, fmt.Errorf("%q is not a header field's name", f.name)
		}
		*f.to = http.CanonicalHeaderKey(f.name)
		switch *f.to {
		case "Authorization", "Cookie", "Host", XForwardedFor, Forwarded:
			return nil, fmt.Errorf("%s cannot name a user or groups: it has a meaning of its own", *f.to)
		}
	}
	if p.groups != "" && p.user == "" {
		return nil, errors.New("groups are taken from a field only with a user's field")
	}
	if p.groups != "" && p.groups == p.user {
		return nil, errors.New("the user's and the groups' fields must differ")
	}
	p.fields = []string{XForwardedFor, Forwarded, "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"}
	for _, f := range []string{p.user, p.groups} {
		if f != "" {
			p.fields = append(p.fields, f)
		}
	}
	return p, nil
}

// fieldName reports whether s is a header field's name: a token (RFC
// 9110 5.6.2).
func fieldName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Trusts reports whether a is the address of a trusted proxy.
func (p *Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, n := range p.trusted {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Handler returns next, given every request as Resolve makes it.
func (p *Proxies) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, p.Resolve(r))
	})
}

// Resolve returns r as its client sent it. From a trusted proxy, its
// RemoteAddr becomes the client's address, found in the forwarded field
// from its right end, the nearest hop: the first address, leftwards,
// that is not a trusted proxy's (a chain of trusted proxies is walked
// through; the fields left of the first untrusted hop are the client's
// own and never read). A hop that names no address (unknown, an
// obfuscated name, garbage) ends the walk at the proxy that wrote it.
// The request then also carries the user the proxy names, for Identify.
// From any other peer, the forwarded fields and the user's and groups'
// fields are taken away, so that no handler can read them.
func (p *Proxies) Resolve(r *http.Request) *http.Request {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !p.Trusts(peer.Addr()) {
		return p.strip(r)
	}
	v := &via{peer: r.RemoteAddr}
	if p.user != "" {
		v.user = strings.TrimSpace(r.Header.Get(p.user))
		if v.user != "" && p.groups != "" {
			v.groups, v.partial = parseGroups(r.Header[p.groups])
			v.grouped = true
		}
	}
	r2 := r.WithContext(context.WithValue(r.Context(), viaKey{}, v))
	if client, ok := p.client(r.Header[p.forwarded]); ok {
		r2.RemoteAddr = client.String()
	}
	return r2
}

// client returns the client's address the forwarded field's values
// name, read from the right; ok is false when they name none.
func (p *Proxies) client(values []string) (netip.AddrPort, bool) {
	var hops []hop
	if p.forwarded == Forwarded {
		hops = forwardedFor(values)
	} else {
		hops = xForwardedFor(values)
	}
	var client netip.AddrPort
	found := false
	for i := len(hops) - 1; i >= 0; i-- {
		if !hops[i].ok {
			break // the proxy that wrote it does not know: it is the client
		}
		client, found = hops[i].addr, true
		if !p.Trusts(client.Addr()) {
			break
		}
	}
	return client, found
}

// strip returns r without the fields only a trusted proxy may send; r
// itself when it has none (the common case costs no copy).
func (p *Proxies) strip(r *http.Request) *http.Request {
	has := false
	for _, f := range p.fields {
		if _, ok := r.Header[f]; ok {
			has = true
			break
		}
	}
	if !has {
		return r
	}
	r2 := r.Clone(r.Context())
	for _, f := range p.fields {
		delete(r2.Header, f)
	}
	return r2
}

// via is what a trusted proxy said of a request's client.
type via struct {
	peer    string   // the proxy's address
	user    string   // the user it names, "" for none
	groups  []string // that user's groups, when grouped
	grouped bool     // the groups' field is read: none listed is no group
	partial bool     // groups past maxProxyGroup were dropped
}

type viaKey struct{}

// viaOf returns what a trusted proxy said of r's client, or nil when r
// came from no trusted proxy.
func viaOf(r *http.Request) *via {
	v, _ := r.Context().Value(viaKey{}).(*via)
	return v
}

// Proxy returns the address of the trusted proxy r came through, and
// whether it came through one.
func Proxy(r *http.Request) (string, bool) {
	if v := viaOf(r); v != nil {
		return v.peer, true
	}
	return "", false
}

// hop is one address of a forwarded field; ok is false for one that
// names none.
type hop struct {
	addr netip.AddrPort
	ok   bool
}

// xForwardedFor reads X-Forwarded-For's values: addresses separated by
// commas, each with or without a port.
func xForwardedFor(values []string) []hop {
	var hops []hop
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue // an empty element of a list is no hop (RFC 9110 5.6.1)
			}
			hops = append(hops, parseNode(item))
		}
	}
	return hops
}

// forwardedFor reads the for= parameters of Forwarded's values (RFC
// 7239): a list of elements separated by commas, each of pairs separated
// by semicolons, whose values are tokens or quoted strings. An element
// without for= is a hop that names no address.
func forwardedFor(values []string) []hop {
	var hops []hop
	for _, v := range values {
		for len(v) > 0 {
			var h hop
			var end bool
			h, v, end = forwardedElement(v)
			if !end {
				hops = append(hops, h)
			}
		}
	}
	return hops
}

// forwardedElement reads one element at the start of s and returns it
// and what follows its comma; empty is true for an empty element.
func forwardedElement(s string) (h hop, rest string, empty bool) {
	empty = true
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return h, "", empty
		}
		if s[0] == ',' {
			return h, s[1:], empty
		}
		if s[0] == ';' {
			s = s[1:]
			continue
		}
		empty = false
		i := strings.IndexAny(s, "=;,")
		if i < 0 || s[i] != '=' {
			// A pair without a value: malformed; the element names no
			// address.
			h = hop{}
			if i < 0 {
				return h, "", false
			}
			s = s[i:]
			continue
		}
		key := strings.TrimSpace(s[:i])
		var value string
		var ok bool
		value, s, ok = forwardedValue(s[i+1:])
		if strings.EqualFold(key, "for") {
			if ok {
				h = parseNode(value)
			} else {
				h = hop{}
			}
		}
	}
}

// forwardedValue reads a token or a quoted string at the start of s and
// returns it and what follows it; ok is false when it is malformed.
func forwardedValue(s string) (value, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(s, `"`) {
		i := strings.IndexAny(s, ";,")
		if i < 0 {
			i = len(s)
		}
		return strings.TrimSpace(s[:i]), s[i:], true
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		case '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false // no closing quote
}

// parseNode reads an address, with or without a port, in any of the
// forms proxies write: 192.0.2.1, 192.0.2.1:8080, [2001:db8::1],
// [2001:db8::1]:8080, or a bare IPv6 address. "unknown", an obfuscated
// name ("_hidden") and anything else name no address.
func parseNode(s string) hop {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil && a.Zone() == "" {
		return hop{addr: netip.AddrPortFrom(a.Unmap(), 0), ok: true}
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return hop{addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ok: true}
	}
	return hop{}
}

// Bounds of what a proxy may say of a user.
const (
	maxNameBytes  = 256
	maxProxyGroup = 64 // groups taken from one request
)

// parseGroups reads the groups' field: names separated by commas (as
// Authelia and oauth2-proxy send them) or bars (as Authentik does),
// blanks around them ignored. Names that no group may have are dropped
// (no rule can name them), and so are those past maxProxyGroup, which
// makes the list partial: the user's other groups are then unknown (see
// memberships). The result is sorted, without repeats.
func parseGroups(values []string) (groups []string, partial bool) {
	var out []string
	for _, v := range values {
		for g := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ',' || r == '|' }) {
			g = strings.TrimSpace(g)
			switch {
			case !validGroup(g):
			case len(out) < maxProxyGroup:
				out = append(out, g)
			default:
				partial = true
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), partial
}

// validUser reports whether name may be a user's: not empty, not one of
// the names rules give to others, without a colon or a control
// character, valid UTF-8, and at most maxNameBytes long.
func validUser(name string) bool {
	return name != Anonymous && name != Everyone && !strings.Contains(name, ":") && validText(name)
}

// validGroup reports whether g may be a group's name: as a user's, and
// without the separators of the groups' field.
func validGroup(g string) bool {
	return !strings.ContainsAny(g, ":,|") && validText(g)
}

func validText(s string) bool {
	if s == "" || len(s) > maxNameBytes || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// memberships are the groups a trusted proxy named for each user, as of
// the user's latest request through it (all of them, or the first
// maxProxyGroup: a partial list). They are the user's groups
// until it names others: a request of the same user that comes another
// way (a token, a share link they made) is judged with them too, since
// the proxy is where the user's groups are decided. Bounded: past
// maxMembers users, the least recently seen is forgotten for each new one
// (internal/lru).
//
// When the proxy names groups (told), a user whose groups it has not
// named since the server started, who was forgotten, or whose list was
// partial, has groups unknown (besides those named): the rules judge them by the least any groups could give them
// (Rules.allowedUnknown), never by the access file's groups alone, so
// that a rule restricting a group is not escaped for want of knowing
// who is in it. Safe for concurrent use; a nil *memberships holds
// nothing and is never told. Make one with newMemberships.
type memberships struct {
	told atomic.Bool // a trusted proxy names its users' groups
	m    *lru.Cache[string, membership]
}

func newMemberships() *memberships {
	return &memberships{m: lru.New[string, membership](maxMembers)}
}

// membership is what the proxy last named of one user's groups.
type membership struct {
	groups  []string
	partial bool
}

// maxMembers bounds the users whose groups are remembered.
const maxMembers = 1 << 16

// of returns the groups the proxy last named for user; known is false
// when the proxy names groups and has named none for user yet, or only
// some of them.
func (ms *memberships) of(user string) (groups []string, known bool) {
	if ms == nil {
		return nil, true
	}
	m, ok := ms.m.Get(user)
	return m.groups, ok && !m.partial || !ms.told.Load()
}

// set records user's groups, sorted without repeats; partial when the
// proxy named more than were kept.
func (ms *memberships) set(user string, groups []string, partial bool) {
	old, ok := ms.m.Get(user)
	if ok && old.partial == partial && slices.Equal(old.groups, groups) {
		return // the common case: the groups have not changed
	}
	ms.m.Add(user, membership{groups: groups, partial: partial})
}
