package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"largo"
)

// maxHops bounds the links one resolution follows, as the kernel's
// ELOOP does.
const maxHops = 40

var _ largo.Resolver = (*Store)(nil)

// Resolve implements largo.Resolver: it walks name element by element
// with Lstat, and where an element is a symbolic link, reads it and goes
// on from its target. Links with absolute targets, or targets that climb
// out of the folder, lead out, as os.Root would refuse them.
func (s *Store) Resolve(_ context.Context, name string) (string, []largo.Hop, error) {
	var hops []largo.Hop
	done, rest := "", name
	for rest != "" {
		elem, tail, _ := strings.Cut(rest, "/")
		cur := largo.Join(done, elem)
		fi, err := s.root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			// Nothing there (or a file where a folder should be, which
			// the call itself will report): the rest is as spelled.
			return joinTail(cur, tail), hops, nil
		case err != nil:
			return "", nil, mapErr(err)
		case fi.Mode()&fs.ModeSymlink == 0:
			done, rest = cur, tail
			continue
		}
		if len(hops) == maxHops {
			return "", nil, fmt.Errorf("%s: too many links: %w", name, largo.ErrNotFound)
		}
		target, err := s.root.Readlink(cur)
		if err != nil {
			return "", nil, mapErr(err)
		}
		if path.IsAbs(target) {
			return "", nil, fmt.Errorf("%s: a link leads out of the folder: %w", name, largo.ErrNotFound)
		}
		t := path.Join(done, target)
		switch {
		case t == "..", strings.HasPrefix(t, "../"):
			return "", nil, fmt.Errorf("%s: a link leads out of the folder: %w", name, largo.ErrNotFound)
		case t == ".":
			t = ""
		}
		hops = append(hops, largo.Hop{Link: cur, Target: t})
		done, rest = "", joinTail(t, tail)
	}
	return done, hops, nil
}

// joinTail joins a name and the elements left after it.
func joinTail(name, tail string) string {
	switch {
	case tail == "":
		return name
	case name == "":
		return tail
	}
	return name + "/" + tail
}
