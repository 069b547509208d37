package auth

import (
	"fmt"
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
)

// Rule grants permissions on a path and everything below it.
type Rule struct {
	// Path is a store name ("" for the root): the rule covers it and
	// every name below it.
	Path string
	// Users are the user names the rule applies to, Anonymous, or
	// Everyone.
	Users []string
	// Allow is what the rule grants; zero denies.
	Allow Perm
}

// covers reports whether the rule's path is name or a folder above it.
func (r Rule) covers(name string) bool {
	return largo.Within(r.Path, name)
}

// rank orders the rules that cover one name for one user: the longest
// path wins, and at equal length a rule that names the user beats one for
// Everyone. -1: the rule does not apply to user.
func (r Rule) rank(user string) int {
	best := -1
	for _, u := range r.Users {
		switch {
		case u == user:
			best = 2*len(r.Path) + 1
		case u == Everyone && best < 0:
			best = 2 * len(r.Path)
		}
	}
	return best
}

// Rules decides permissions by the longest path prefix among the rules
// that apply to a user. The zero value grants nothing.
type Rules []Rule

// Allowed returns what user ("" or Anonymous: no credential) may do on
// name: the permissions of the rule with the longest path that covers
// name and applies to user; none when no rule does.
func (rs Rules) Allowed(user, name string) Perm {
	if user == "" {
		user = Anonymous
	}
	best, perm := -1, Perm(0)
	for _, r := range rs {
		if !r.covers(name) {
			continue
		}
		if k := r.rank(user); k > best {
			best, perm = k, r.Allow
		}
	}
	return perm
}

// AllowedBelow returns what user may do on name and on every name below
// it: the permissions Allowed gives name, less any that a rule on a path
// below name takes away from user. A request that acts on a whole folder
// (a recursive DELETE) needs its permission there, since the entries
// are not each asked; a rule below that denies it refuses the request,
// whether or not anything exists at the rule's path.
func (rs Rules) AllowedBelow(user, name string) Perm {
	perm := rs.Allowed(user, name)
	for _, r := range rs {
		if largo.Below(name, r.Path) {
			perm &= rs.Allowed(user, r.Path)
		}
	}
	return perm
}
