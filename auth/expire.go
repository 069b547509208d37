package auth

import (
	"fmt"
	"strings"
	"time"

	"largo"
)

// Expire is an access file's [[expire]] table: files under Path expire
// After past their landing (their modification time), unless a longer
// path's table says otherwise. After zero means they never expire (an
// exception below a prefix that expires).
//
//	[[expire]]
//	path = "/inbox"
//	after = "7d"     # 7d, 2w, 36h, 90m, 2s; "0": never
type Expire struct {
	// Path is the prefix, as largo.ParseName returns it ("" for the root).
	Path string
	// After is how long a file under it is kept.
	After time.Duration
}

// expireEntry is an [[expire]] table as the access file spells it.
type expireEntry struct {
	Path  string `toml:"path"`
	After string `toml:"after"`
}

// parseExpires reads the access file's [[expire]] tables.
func parseExpires(file string, es []expireEntry) ([]Expire, error) {
	var out []Expire
	seen := map[string]bool{}
	for i, e := range es {
		where := fmt.Sprintf("access file %s: expire %d (%s)", file, i+1, e.Path)
		name, err := largo.ParseName("/" + strings.TrimPrefix(e.Path, "/"))
		if err != nil {
			return nil, fmt.Errorf("%s: path: %v", where, err)
		}
		if largo.Reserved(name) {
			return nil, fmt.Errorf("%s: path: a hidden name", where)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: the path is named twice", where)
		}
		seen[name] = true
		if e.After == "" {
			return nil, fmt.Errorf("%s: give after, such as \"7d\" (\"0\": never)", where)
		}
		after, err := largo.ParseAge(e.After)
		if err != nil {
			return nil, fmt.Errorf("%s: after: %v", where, err)
		}
		out = append(out, Expire{Path: name, After: after})
	}
	return out, nil
}

// Expires returns the access file's [[expire]] tables, in its order. The
// slice is the policy's own: do not change it.
func (p *Policy) Expires() []Expire { return p.expires }

// ExpiryOf returns how long the file name is kept past its landing, by
// the [[expire]] table with the longest path that holds it; ok is false
// when none holds it, or the one that does says never.
func (p *Policy) ExpiryOf(name string) (after time.Duration, ok bool) {
	best := -1
	for _, e := range p.expires {
		if largo.Within(e.Path, name) && len(e.Path) > best {
			best, after = len(e.Path), e.After
		}
	}
	return after, best >= 0 && after > 0
}
