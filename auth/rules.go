package auth

import (
	"fmt"
	"slices"
	"strings"

	"largo"
)

// Perm is a set of permissions on a path.
type Perm uint8

// The permissions a rule grants. WebDAV and every upload protocol map onto
// these four; none adds its own.
const (
	// Read: download files, and archives of what may be read.
	Read Perm = 1 << iota
	// List: see a folder's entries (those that may be read).
	List
	// Write: create files, and replace them.
	Write
	// Delete: remove files and folders.
	Delete

	// All is every permission.
	All = Read | List | Write | Delete
)

var permNames = []struct {
	p    Perm
	name string
}{{Read, "read"}, {List, "list"}, {Write, "write"}, {Delete, "delete"}}

// ParsePerm reads a permission's name: read, list, write, delete, or all.
func ParsePerm(s string) (Perm, error) {
	if s == "all" {
		return All, nil
	}
	for _, pn := range permNames {
		if pn.name == s {
			return pn.p, nil
		}
	}
	return 0, fmt.Errorf("unknown permission %q (read, list, write, delete or all)", s)
}

// String lists the permissions, as "read,list".
func (p Perm) String() string {
	var names []string
	for _, pn := range permNames {
		if p&pn.p != 0 {
			names = append(names, pn.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// The user names a rule may name besides those of the users.
const (
	// Anonymous is who sends no credential.
	Anonymous = "anonymous"
	// Everyone is every requester, signed in or not.
	Everyone = "*"
	// GroupPrefix begins a rule's name for a group: "group:admins" is
	// every member of admins. A user's groups are those the access file
	// gives them and those a trusted proxy names (proxy.go). A user's
	// name never holds a colon, so the two cannot be confused.
	GroupPrefix = "group:"
)

// Rule grants permissions on a path and everything below it.
type Rule struct {
	// Path is a store name ("" for the root): the rule covers it and
	// every name below it.
	Path string
	// Users are the user names the rule applies to, Anonymous,
	// Everyone, or groups (GroupPrefix and the group's name).
	Users []string
	// Allow is what the rule grants; zero denies.
	Allow Perm
	// Redirect, when RedirectPresigned, answers the downloads the rule
	// decides with a redirect to a presigned URL of the store, which then
	// sends the bytes itself; "" serves them.
	Redirect string
}

// RedirectPresigned is the value of Rule.Redirect (redirect =
// "presigned" in an access file) that sends a rule's downloads to a
// presigned URL of the store.
const RedirectPresigned = "presigned"

// covers reports whether the rule's path is name or a folder above it.
func (r *Rule) covers(name string) bool {
	return largo.Within(r.Path, name)
}

// Ranks of the rules that cover one name, for one user: the longest
// path wins, and at one path a rule that names the user beats one that
// names a group of theirs, which beats one for Everyone.
const (
	rankEveryone = iota
	rankGroup
	rankUser
	rankLevels
)

// member is who a rule is asked about: a user's name ("anonymous" for no
// credential) and the groups they are in, from the access file and
// from a trusted proxy; grouped when there are any, or when those the
// proxy names are unknown (see memberships).
type member struct {
	name        string
	file, proxy []string
	grouped     bool
	unknown     bool
}

// inAny reports whether m is in a group that users name.
func (m *member) inAny(users []string) bool {
	for _, u := range users {
		if g, ok := strings.CutPrefix(u, GroupPrefix); ok && (slices.Contains(m.file, g) || slices.Contains(m.proxy, g)) {
			return true
		}
	}
	return false
}

// rank orders the rules that cover one name for m (see rankUser); -1:
// the rule does not apply to m.
func (r *Rule) rank(m *member) int {
	k := r.rankName(m.name)
	if m.grouped && k%rankLevels < rankGroup && m.inAny(r.Users) {
		k = rankLevels*len(r.Path) + rankGroup
	}
	return k
}

// rankName is rank for a name alone, with no groups: on every decision's
// path, and small enough to be inlined there.
func (r *Rule) rankName(name string) int {
	best := -1
	for _, u := range r.Users {
		switch {
		case u == name:
			return rankLevels*len(r.Path) + rankUser
		case u == Everyone:
			best = rankLevels*len(r.Path) + rankEveryone
		}
	}
	return best
}

// Rules decides permissions by the longest path prefix among the rules
// that apply to a user. The zero value grants nothing.
type Rules []Rule

// Allowed returns what user ("" or Anonymous: no credential) may do on
// name: the permissions of the rule with the longest path that covers
// name and applies to user; none when no rule does. Rules asked this
// way know no groups: a Policy's Allowed does.
func (rs Rules) Allowed(user, name string) Perm {
	return rs.allowed(&member{name: user}, name)
}

// allowed is Allowed for m. At one path, a rule naming m beats rules
// naming m's groups, which beat a rule for Everyone; the rules of
// several of m's groups at one path add up.
func (rs Rules) allowed(m *member, name string) Perm {
	perm, _ := rs.decide(m, name)
	return perm
}

// decide is allowed, and whether the rules that decide redirect (any of
// them, for several of m's groups). A member whose groups are unknown is
// never redirected: what decides for them is not one rule.
func (rs Rules) decide(m *member, name string) (Perm, bool) {
	if m.name == "" {
		m.name = Anonymous
	}
	if m.unknown {
		return rs.allowedUnknown(m, name), false
	}
	best, perm, redirect := -1, Perm(0), false
	for i := range rs {
		r := &rs[i]
		if !r.covers(name) {
			continue
		}
		k := r.rankName(m.name) // inlined: rank, for the common case of no groups
		if m.grouped && k%rankLevels < rankGroup && m.inAny(r.Users) {
			k = rankLevels*len(r.Path) + rankGroup
		}
		switch {
		case k > best:
			best, perm, redirect = k, r.Allow, r.Redirect != ""
		case k == best && k%rankLevels == rankGroup:
			perm |= r.Allow
			redirect = redirect || r.Redirect != ""
		}
	}
	return perm, redirect
}

// allowedUnknown is allowed for a member some of whose groups are unknown
// (a trusted proxy names them, and has not named them for this user
// yet): the least that any groups could give them, so that a rule that
// restricts a group still applies, and one that grants a group nothing
// more. The paths that cover name are taken longest first, as allowed
// takes them. At each: a rule naming the member decides; else rules of
// groups the access file gives them decide (they apply whatever the
// proxy would say); else a rule of any other group might apply, and what
// it allows bounds the answer, which then falls, as when the member is
// in none of them, to a rule for everyone at that path, or to the next
// path up. No rule at all grants nothing.
func (rs Rules) allowedUnknown(m *member, name string) Perm {
	least := All
	for p := name; ; {
		var user, known, every Perm
		hasUser, hasKnown, hasEvery := false, false, false
		for i := range rs {
			r := &rs[i]
			if r.Path != p {
				continue
			}
			switch k := r.rankName(m.name); {
			case k >= 0 && k%rankLevels == rankUser:
				if !hasUser {
					user, hasUser = r.Allow, true
				}
				continue
			case k >= 0 && !hasEvery:
				every, hasEvery = r.Allow, true
			}
			if m.inAny(r.Users) { // the access file's groups: the proxy's are none yet
				known, hasKnown = known|r.Allow, true
			} else if r.namesGroup() {
				least &= r.Allow
			}
		}
		switch {
		case hasUser:
			return least & user
		case hasKnown:
			return least & known
		case hasEvery:
			return least & every
		case p == "":
			return 0
		}
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			p = p[:i]
		} else {
			p = ""
		}
	}
}

// namesGroup reports whether the rule names a group.
func (r *Rule) namesGroup() bool {
	for _, u := range r.Users {
		if strings.HasPrefix(u, GroupPrefix) {
			return true
		}
	}
	return false
}

// AllowedBelow returns what user may do on name and on every name below
// it: the permissions Allowed gives name, less any that a rule on a path
// below name takes away from user. A request that acts on a whole folder
// (a recursive DELETE) needs its permission there, since the entries
// are not each asked; a rule below that denies it refuses the request,
// whether or not anything exists at the rule's path.
func (rs Rules) AllowedBelow(user, name string) Perm {
	return rs.allowedBelow(&member{name: user}, name)
}

// allowedBelow is AllowedBelow for m.
func (rs Rules) allowedBelow(m *member, name string) Perm {
	perm := rs.allowed(m, name)
	for _, r := range rs {
		if largo.Below(name, r.Path) {
			perm &= rs.allowed(m, r.Path)
		}
	}
	return perm
}
