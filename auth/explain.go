package auth

import (
	"slices"
	"strings"

	"largo"
)

// Explanation says who may do what on one path under a policy: what the
// rules give a request without a credential, a signed-in user whom no
// rule names, and each user and group that a rule names (or whose groups
// a rule names). It is what an operator asks ("who can see /backups?"):
// what largo access check prints for each path the rules name, and what
// a folder's page says of the folder ("visible to: ...").
//
// Users are judged with the groups the access file gives them; the
// groups a trusted proxy names for its users are not known ahead, and
// are told by the groups' own entries. Share links are not told: each
// grants what its maker may do, to whoever holds it.
type Explanation struct {
	// Path is the name explained: "" for the root.
	Path string
	// Anonymous is what a request without a credential may do.
	Anonymous Perm
	// SignedIn is what a signed-in user may do whom no rule names, by
	// name or by a group.
	SignedIn Perm
	// Named is what each user and group may do where it differs from
	// SignedIn: a user by name, a group as GroupPrefix and its name (what
	// a member of that group alone is given), in name order.
	Named []Grant
}

// Grant is what one user or group may do on a path.
type Grant struct {
	// Who is a user's name, or GroupPrefix and a group's name.
	Who  string
	Perm Perm
}

// nobody is a name no rule can name: the signed-in user whom no rule
// names, and a member of one group alone.
const nobody = "\x00"

// Explain says who may do what on name (a store name, "" for the root),
// as the server decides it: for one of the server's own routes that the
// rules may name (/_largo/metrics), by the rules of that path alone
// (GrantedAt).
func (p *Policy) Explain(name string) Explanation {
	e := Explanation{Path: name}
	rules := p.rules
	if largo.Reserved(name) {
		rules = p.rulesAt(name)
	}
	e.Anonymous = rules.allowed(&member{name: Anonymous}, name)
	e.SignedIn = rules.allowed(&member{name: nobody}, name)
	users, groups := p.named()
	add := func(who string, perm Perm) {
		if perm != e.SignedIn {
			e.Named = append(e.Named, Grant{Who: who, Perm: perm})
		}
	}
	for _, u := range users {
		file := p.users[u].groups
		add(u, rules.allowed(&member{name: u, file: file, grouped: len(file) > 0}, name))
	}
	for _, g := range groups {
		add(GroupPrefix+g, rules.allowed(&member{name: nobody, file: []string{g}, grouped: true}, name))
	}
	slices.SortFunc(e.Named, func(a, b Grant) int { return strings.Compare(a.Who, b.Who) })
	return e
}

// User returns what the user named user may do on the path explained,
// with the groups the access file gives them: their own grant where the
// explanation names them, else what any signed-in user may.
func (e Explanation) User(user string) Perm {
	for _, g := range e.Named {
		if g.Who == user {
			return g.Perm
		}
	}
	return e.SignedIn
}

// named returns the users whose permissions may differ from those of a
// user whom no rule names (those a rule names, and those in a group a
// rule names), and every group a rule or the access file names, each
// sorted.
func (p *Policy) named() (users, groups []string) {
	inRules := map[string]bool{}
	groupSet := map[string]bool{}
	for _, r := range p.rules {
		for _, u := range r.Users {
			switch g, ok := strings.CutPrefix(u, GroupPrefix); {
			case ok:
				groupSet[g] = true
			case u != Anonymous && u != Everyone:
				inRules[u] = true
			}
		}
	}
	userSet := map[string]bool{}
	for u := range inRules {
		userSet[u] = true // a trusted proxy may sign in users the file does not list
	}
	for name, u := range p.users {
		for _, g := range u.groups {
			if groupSet[g] {
				userSet[name] = true
			}
		}
	}
	for _, u := range p.users {
		for _, g := range u.groups {
			groupSet[g] = true
		}
	}
	for u := range userSet {
		users = append(users, u)
	}
	for g := range groupSet {
		groups = append(groups, g)
	}
	slices.Sort(users)
	slices.Sort(groups)
	return users, groups
}

// Who is who may do something on a path, as an Explanation tells it.
type Who struct {
	// Anonymous: a request without a credential may.
	Anonymous bool
	// SignedIn: every signed-in user may, but those in Except.
	SignedIn bool
	// Names are the users and groups (GroupPrefix and the name) who may,
	// when SignedIn is false; Except those who may not, when it is true.
	Names, Except []string
}

// Who says who may do any of perm on the path explained.
func (e Explanation) Who(perm Perm) Who {
	w := Who{Anonymous: e.Anonymous&perm != 0, SignedIn: e.SignedIn&perm != 0}
	for _, g := range e.Named {
		has := g.Perm&perm != 0
		switch {
		case w.SignedIn && !has:
			w.Except = append(w.Except, g.Who)
		case !w.SignedIn && has:
			w.Names = append(w.Names, g.Who)
		}
	}
	return w
}
