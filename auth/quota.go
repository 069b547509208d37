package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"largo"
)

// Quota is a limit on stored files: the files a user owns, or all the
// files under a path. A zero Bytes or Files means no limit of that kind.
type Quota struct {
	// Path is the prefix the quota covers, as returned by
	// largo.ParseName ("" for all the files); empty for a user's quota.
	Path string
	// Bytes is the most bytes the files may hold together.
	Bytes int64
	// Files is the most files there may be.
	Files int64
}

// Limited reports whether q limits anything.
func (q Quota) Limited() bool { return q.Bytes > 0 || q.Files > 0 }

// userQuota reads a user's quota and quota_files into u.
func userQuota(u *user, bytes *string, files *int64) error {
	if bytes != nil {
		n, err := largo.ParseSize(*bytes)
		if err != nil {
			return fmt.Errorf("quota: %v", err)
		}
		u.quota.Bytes = n
		u.hasQuota = true
	}
	if files != nil {
		if *files < 0 {
			return errors.New("quota_files: not a count of files")
		}
		u.quota.Files = *files
		u.hasQuota = true
	}
	return nil
}

// pathQuotas reads the access file's [[quota]] tables.
func pathQuotas(file string, tables []struct {
	Path  string `toml:"path"`
	Bytes string `toml:"bytes"`
	Files int64  `toml:"files"`
}) ([]Quota, error) {
	var out []Quota
	seen := map[string]bool{}
	for i, t := range tables {
		where := fmt.Sprintf("access file %s: quota %d (%s)", file, i+1, t.Path)
		name, err := largo.ParseName("/" + strings.TrimPrefix(t.Path, "/"))
		if err != nil || t.Path == "" {
			return nil, fmt.Errorf("%s: path: give the folder the quota covers, such as /projects", where)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: a path given twice", where)
		}
		seen[name] = true
		q := Quota{Path: name, Files: t.Files}
		if t.Bytes != "" {
			if q.Bytes, err = largo.ParseSize(t.Bytes); err != nil {
				return nil, fmt.Errorf("%s: bytes: %v", where, err)
			}
		}
		if t.Files < 0 {
			return nil, fmt.Errorf("%s: files: not a count of files", where)
		}
		if !q.Limited() {
			return nil, fmt.Errorf("%s: give bytes, files or both", where)
		}
		out = append(out, q)
	}
	return out, nil
}

// UserQuota returns the quota the access file gives user, and whether it
// gives one (quota or quota_files); without one, the server's default
// for users applies.
func (p *Policy) UserQuota(user string) (Quota, bool) {
	u, ok := p.users[user]
	return u.quota, ok && u.hasQuota
}

// PathQuotas returns the access file's quotas of paths, in its order.
func (p *Policy) PathQuotas() []Quota { return p.quotas }

// HasQuotas reports whether the access file gives any quota, of a user
// or of a path.
func (p *Policy) HasQuotas() bool {
	if len(p.quotas) > 0 {
		return true
	}
	for _, u := range p.users {
		if u.hasQuota {
			return true
		}
	}
	return false
}

// QuotaUsers returns the users the access file gives a quota, sorted.
func (p *Policy) QuotaUsers() []string {
	var out []string
	for name, u := range p.users {
		if u.hasQuota {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
