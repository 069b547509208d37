package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"largo"
)

// Policy is who the users are and what the rules grant them: what an
// access file says, or what the one-user flags (--token, --upload-open)
// stand for. A Policy is immutable once made and safe for concurrent use.
type Policy struct {
	users  map[string]user
	tokens map[[32]byte]string // SHA-256 of a token -> user name
	s3keys map[string]s3Key    // S3 access key ID -> its user and secret (s3.go)
	rules  Rules
	// ShareKey signs share links; nil means the caller finds one (the
	// store's state area).
	ShareKey []byte
	// anyUser: a trusted proxy may sign in users the file does not list.
	anyUser bool
	// groups: some rule names a group, so a user's groups are looked up.
	groups bool
	// proxied are the groups a trusted proxy named for its users, kept by
	// the Access the policy is in force in (nil: none).
	proxied *memberships
	// expires are the [[expire]] tables (expire.go).
	expires []Expire
	// quotas are the [[quota]] tables: limits per path prefix.
	quotas []Quota
	// redirects: some rule sends its downloads to presigned URLs.
	redirects bool
	// nameless is the user of the one-user token (--token), who has no
	// name of its own; "" for none.
	nameless string
}

type user struct {
	name     string
	password *hash    // nil: no password sign-in
	groups   []string // the groups the access file puts the user in
	proxy    bool     // signs in only through a trusted proxy
	rate     int64    // bytes per second; see Policy.Rate
	hasRate  bool     // the access file gives a rate
	quota    Quota    // the user's quota; see Policy.UserQuota
	hasQuota bool     // the access file gives quota or quota_files
}

// file is the access file's form, in TOML:
//
//	[[user]]
//	name = "alice"
//	password = "$argon2id$v=19$m=65536,t=3,p=4$..."   # from largo passwd
//	tokens = ["a-long-random-token"]                 # bearer tokens
//	s3_keys = [{ id = "LK...", secret = "..." }]     # S3 API keys (largo s3key)
//	groups = ["admins"]
//	rate = "10MB"      # bandwidth cap, bytes per second each way, all of the
//	                   # user's transfers together ("0": none, whatever
//	                   # --rate-per-user says)
//	quota = "10GB"     # most bytes of the files the user owns ("0": none,
//	quota_files = 1000 # whatever --quota-per-user says); most files
//
//	[[quota]]          # all files under a path, whoever wrote them
//	path = "/projects"
//	bytes = "100GB"
//	files = 100000
//
//	[[rule]]
//	path = "/"
//	users = ["*"]                # "*": everyone; "anonymous": no credential
//	allow = ["read", "list"]
//
//	[[rule]]
//	path = "/backups"
//	users = ["alice", "group:admins"]
//	allow = ["all"]
//
//	[[rule]]
//	path = "/videos"
//	users = ["*"]
//	allow = ["read", "list"]
//	redirect = "presigned"   # downloads answered 307 to the bucket's URL
//
//	[[expire]]         # files under /inbox are removed 7 days after they land
//	path = "/inbox"
//	after = "7d"
//
//	[share]
//	key_file = "/etc/largo/share.key"   # else kept in the store's state area
//
//	[proxy]            # users sign in through a trusted proxy (--identity-header)
//	users = "listed"   # only the users above (the default), or "any" name
//
// With a [proxy] table, a user may have neither password nor tokens: they
// sign in only through the proxy.
type file struct {
	User []struct {
		Name       string       `toml:"name"`
		Password   string       `toml:"password"`
		Tokens     []string     `toml:"tokens"`
		Groups     []string     `toml:"groups"`
		Rate       *string      `toml:"rate"`
		Quota      *string      `toml:"quota"`
		QuotaFiles *int64       `toml:"quota_files"`
		S3Keys     []s3KeyEntry `toml:"s3_keys"`
	} `toml:"user"`
	Quota []struct {
		Path  string `toml:"path"`
		Bytes string `toml:"bytes"`
		Files int64  `toml:"files"`
	} `toml:"quota"`
	Rule []struct {
		Path     string   `toml:"path"`
		Users    []string `toml:"users"`
		Allow    []string `toml:"allow"`
		Redirect string   `toml:"redirect"`
	} `toml:"rule"`
	Expire []expireEntry `toml:"expire"`
	Share  struct {
		Key     string `toml:"key"`
		KeyFile string `toml:"key_file"`
	} `toml:"share"`
	Proxy struct {
		Users string `toml:"users"`
	} `toml:"proxy"`
}

// The values of the access file's proxy.users.
const (
	proxyListed = "listed"
	proxyAny    = "any"
)

// LoadFile reads an access file. Every mistake in it is an error that
// names the entry, never a secret.
func LoadFile(path string) (*Policy, error) {
	var f file
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		return nil, fmt.Errorf("access file %s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("access file %s: unknown key %s", path, und[0])
	}
	p := &Policy{users: map[string]user{}, tokens: map[[32]byte]string{}}
	proxy := md.IsDefined("proxy")
	switch f.Proxy.Users {
	case "", proxyListed:
	case proxyAny:
		p.anyUser = true
	default:
		return nil, fmt.Errorf("access file %s: proxy: users = %q: %q or %q", path, f.Proxy.Users, proxyListed, proxyAny)
	}
	for i, u := range f.User {
		where := fmt.Sprintf("access file %s: user %d (%s)", path, i+1, u.Name)
		if u.Name == "" || u.Name == Anonymous || u.Name == Everyone || strings.ContainsAny(u.Name, ":\x00") {
			return nil, fmt.Errorf("%s: a user needs a name, other than %q and %q, without a colon", where, Anonymous, Everyone)
		}
		if _, dup := p.users[u.Name]; dup {
			return nil, fmt.Errorf("%s: named twice", where)
		}
		us := user{name: u.Name}
		if u.Password != "" {
			h, err := parseHash(u.Password)
			if err != nil {
				return nil, fmt.Errorf("%s: password: %v", where, err)
			}
			us.password = &h
		}
		switch {
		case us.password != nil || len(u.Tokens) > 0 || len(u.S3Keys) > 0:
		case proxy:
			us.proxy = true
		default:
			return nil, fmt.Errorf("%s: give a password hash, tokens or S3 keys (or a [proxy] table, for users who sign in only through a trusted proxy)", where)
		}
		if err := p.addS3Keys(where, u.Name, u.S3Keys); err != nil {
			return nil, err
		}
		for _, g := range u.Groups {
			if !validGroup(g) {
				return nil, fmt.Errorf("%s: group %q: a group needs a name, without a colon, a comma or a bar", where, g)
			}
		}
		us.groups = u.Groups
		if u.Rate != nil {
			if us.rate, err = largo.ParseSize(*u.Rate); err != nil {
				return nil, fmt.Errorf("%s: rate: %v", where, err)
			}
			us.hasRate = true
		}
		if err := userQuota(&us, u.Quota, u.QuotaFiles); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		for _, t := range u.Tokens {
			if len(t) < 16 {
				return nil, fmt.Errorf("%s: a token must be at least 16 characters", where)
			}
			sum := sha256.Sum256([]byte(t))
			if _, dup := p.tokens[sum]; dup {
				return nil, fmt.Errorf("%s: a token given twice", where)
			}
			p.tokens[sum] = u.Name
		}
		p.users[u.Name] = us
	}
	for i, r := range f.Rule {
		where := fmt.Sprintf("access file %s: rule %d (%s)", path, i+1, r.Path)
		name, err := largo.ParseName("/" + strings.TrimPrefix(r.Path, "/"))
		if err != nil {
			return nil, fmt.Errorf("%s: path: %v", where, err)
		}
		rule := Rule{Path: name, Users: r.Users}
		if len(r.Users) == 0 {
			return nil, fmt.Errorf("%s: name its users (or \"*\" for everyone)", where)
		}
		for _, u := range r.Users {
			if g, ok := strings.CutPrefix(u, GroupPrefix); ok {
				if !validGroup(g) {
					return nil, fmt.Errorf("%s: group %q: a group needs a name, without a colon, a comma or a bar", where, g)
				}
				p.groups = true
				continue
			}
			if _, ok := p.users[u]; !ok && u != Anonymous && u != Everyone && !(p.anyUser && validUser(u)) {
				return nil, fmt.Errorf("%s: no user %q", where, u)
			}
		}
		for _, a := range r.Allow {
			perm, err := ParsePerm(a)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			rule.Allow |= perm
		}
		switch r.Redirect {
		case "":
		case RedirectPresigned:
			if rule.Allow&Read == 0 {
				return nil, fmt.Errorf("%s: redirect: the rule grants no read to redirect", where)
			}
			rule.Redirect, p.redirects = r.Redirect, true
		default:
			return nil, fmt.Errorf("%s: redirect = %q: %q or none", where, r.Redirect, RedirectPresigned)
		}
		p.rules = append(p.rules, rule)
	}
	if p.expires, err = parseExpires(path, f.Expire); err != nil {
		return nil, err
	}
	if p.quotas, err = pathQuotas(path, f.Quota); err != nil {
		return nil, err
	}
	switch {
	case f.Share.Key != "" && f.Share.KeyFile != "":
		return nil, fmt.Errorf("access file %s: share: key or key_file, not both", path)
	case f.Share.Key != "":
		if p.ShareKey, err = decodeKey(f.Share.Key); err != nil {
			return nil, fmt.Errorf("access file %s: share key: %v", path, err)
		}
	case f.Share.KeyFile != "":
		if p.ShareKey, err = ReadKeyFile(f.Share.KeyFile); err != nil {
			return nil, fmt.Errorf("access file %s: %v", path, err)
		}
	}
	if len(p.s3keys) > 0 {
		if err := checkSecretFile(path); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ReadKeyFile reads a share key: at least 32 bytes, given as they are or
// in hex or base64 text.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("share key file: %v", errors.Unwrap(err))
	}
	if k, err := decodeKey(strings.TrimSpace(string(b))); err == nil {
		return k, nil
	}
	if len(b) < 32 {
		return nil, fmt.Errorf("share key file %s: shorter than 32 bytes", path)
	}
	return b, nil
}

// decodeKey reads a key in hex or base64, of at least 32 bytes.
func decodeKey(s string) ([]byte, error) {
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawURLEncoding.DecodeString} {
		if k, err := dec(s); err == nil && len(k) >= 32 {
			return k, nil
		}
	}
	return nil, errors.New("not 32 bytes or more in hex or base64")
}

// OneUser is the policy of the one-user flags: anyone reads and lists;
// with a token, who sends it does everything; with open, everyone does
// everything (writes without a credential).
func OneUser(token string, open bool) *Policy {
	p := &Policy{users: map[string]user{}, tokens: map[[32]byte]string{}}
	p.rules = Rules{{Path: "", Users: []string{Everyone}, Allow: Read | List}}
	switch {
	case open:
		p.rules[0].Allow = All
	case token != "":
		const name = "token"
		p.users[name] = user{name: name}
		p.nameless = name
		p.tokens[sha256.Sum256([]byte(token))] = name
		p.rules = append(p.rules, Rule{Path: "", Users: []string{name}, Allow: All})
	}
	return p
}

// Nameless reports whether user is the holder of the one-user flags'
// token (--token), who has no name of its own: whoever sends the token
// is that user, under any user name.
func (p *Policy) Nameless(user string) bool { return p.nameless != "" && user == p.nameless }

// Allowed returns what user ("" for no credential) may do on name, by
// the rules that name the user, their groups, or everyone.
func (p *Policy) Allowed(user, name string) Perm {
	m := p.member(user)
	return p.rules.allowed(&m, name)
}

// AllowedBelow returns what user ("" for no credential) may do on name
// and everything below it (see Rules.AllowedBelow).
func (p *Policy) AllowedBelow(user, name string) Perm {
	m := p.member(user)
	return p.rules.allowedBelow(&m, name)
}

// GrantedAt returns what user ("" for no credential) may do on name by
// the rules whose path is name itself: the rules of the folders above it
// do not count. It is how the server's own routes that the rules may name
// (/_largo/metrics) are judged: a route is opened only by a rule of its
// own, never by one that opens "/" to everyone.
func (p *Policy) GrantedAt(user, name string) Perm {
	m := p.member(user)
	return p.rulesAt(name).allowed(&m, name)
}

// rulesAt returns the rules whose path is name itself.
func (p *Policy) rulesAt(name string) Rules {
	var own Rules
	for _, r := range p.rules {
		if r.Path == name {
			own = append(own, r)
		}
	}
	return own
}

// Redirected reports whether the downloads of user ("" for no
// credential) of name are sent to a presigned URL of the store: whether
// the rules that decide what user may do on name say redirect =
// "presigned" (see Rule.Redirect).
func (p *Policy) Redirected(user, name string) bool {
	if !p.redirects {
		return false
	}
	m := p.member(user)
	_, redirect := p.rules.decide(&m, name)
	return redirect
}

// Redirecting lists the paths of the rules that redirect downloads, with
// their users, as "/path: alice,bob", for the log.
func (p *Policy) Redirecting() []string {
	return p.rulesWhere(func(r *Rule) bool { return r.Redirect != "" })
}

// member returns who the rules are asked about for user: with the
// groups the access file and a trusted proxy put them in, when a rule
// names a group; and whether the proxy's are unknown (memberships).
func (p *Policy) member(user string) member {
	m := member{name: user}
	if user == "" {
		m.name = Anonymous
		return m
	}
	if p.groups {
		m.file = p.users[user].groups
		var known bool
		m.proxy, known = p.proxied.of(user)
		m.unknown = !known
		m.grouped = len(m.file)+len(m.proxy) > 0 || m.unknown
	}
	return m
}

// ReadsAll reports whether user ("" for no credential) may read and list
// every name: no listing or archive needs filtering for them.
func (p *Policy) ReadsAll(user string) bool {
	m := p.member(user)
	root := false
	for i := range p.rules {
		r := &p.rules[i]
		if r.rank(&m) < 0 && !(m.unknown && r.namesGroup()) {
			continue // a rule of a group may apply to a member whose groups are unknown
		}
		if r.Allow&(Read|List) != Read|List {
			return false
		}
		root = root || r.Path == ""
	}
	return root
}

// Rate returns the bandwidth cap the access file gives user, in bytes per
// second each way, shared by all of the user's transfers (zero: none),
// and whether it gives one; without one, the server's default for users
// applies.
func (p *Policy) Rate(user string) (rate int64, ok bool) {
	u, ok := p.users[user]
	return u.rate, ok && u.hasRate
}

// Knows reports whether name is one of the policy's users: one the
// access file lists, or, when its proxy table lets a trusted proxy sign
// in any name, any name a user may have.
func (p *Policy) Knows(name string) bool {
	_, ok := p.users[name]
	return ok || p.anyUser && validUser(name)
}

// ProxyOnly returns how many users have neither a password nor a token:
// they sign in only through a trusted proxy.
func (p *Policy) ProxyOnly() int {
	n := 0
	for _, u := range p.users {
		if u.proxy {
			n++
		}
	}
	return n
}

// AnyProxyUser reports whether a trusted proxy may sign in users the
// access file does not list.
func (p *Policy) AnyProxyUser() bool { return p.anyUser }

// Rules returns how many rules the policy has.
func (p *Policy) Rules() int { return len(p.rules) }

// Granting describes the rules that grant any of perm, one
// "/PATH: USER,USER" each, for the log at start-up: who may write where.
func (p *Policy) Granting(perm Perm) []string {
	return p.rulesWhere(func(r *Rule) bool { return r.Allow&perm != 0 })
}

// rulesWhere lists the paths of the rules for which keep is true, with
// their users, as "/path: alice,bob".
func (p *Policy) rulesWhere(keep func(*Rule) bool) []string {
	var out []string
	for i := range p.rules {
		if r := &p.rules[i]; keep(r) {
			out = append(out, "/"+r.Path+": "+strings.Join(r.Users, ","))
		}
	}
	return out
}

// Users returns how many users the policy knows.
func (p *Policy) Users() int { return len(p.users) }

// UserNames returns the names of the policy's users, sorted.
func (p *Policy) UserNames() []string {
	names := make([]string, 0, len(p.users))
	for n := range p.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RuleList returns a copy of the policy's rules, in the access file's
// order: what an explanation of the policy walks.
func (p *Policy) RuleList() Rules { return slices.Clone(p.rules) }
