//go:build unix

package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"largo"
)

// maxHops bounds the links one resolution follows, as the kernel's
// ELOOP does.
const maxHops = 40

var _ largo.Resolver = (*Store)(nil)

// Resolve implements largo.Resolver. It walks name element by element
// from the folder's descriptor, as the kernel does: each element is
// looked at relative to the folder reached so far (never by a path, so
// nothing is followed behind its back); where one is a symbolic link its
// target's elements take its place, and a ".." among them steps back to
// the folder the walk came from. A link with an absolute target, or a
// ".." past the root, leads out of the folder.
func (s *Store) Resolve(_ context.Context, name string) (string, []largo.Hop, error) {
	r := resolution{s: s, fds: []int{s.dirFd}}
	defer r.close()
	if name != "" {
		r.push(strings.Split(name, "/"))
	}
	return r.run(name)
}

// resolution is one walk of Resolve.
type resolution struct {
	s     *Store
	queue []string // the elements still to walk, last first
	done  []string // the physical name reached, element by element
	fds   []int    // fds[i]: the folder done[:i], or -1 until opened
	open  []pending
	hops  []largo.Hop
	links int
}

// pending is a link whose target is being walked: it is reached once the
// queue is back to tail elements.
type pending struct {
	link string
	tail int
}

// push puts elems in front of what is left to walk.
func (r *resolution) push(elems []string) {
	for i := len(elems) - 1; i >= 0; i-- {
		r.queue = append(r.queue, elems[i])
	}
}

func (r *resolution) close() {
	for _, fd := range r.fds[1:] {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func (r *resolution) run(name string) (string, []largo.Hop, error) {
	for len(r.queue) > 0 {
		elem := r.queue[len(r.queue)-1]
		r.queue = r.queue[:len(r.queue)-1]
		switch elem {
		case "", ".":
		case "..":
			if len(r.done) == 0 {
				return "", nil, fmt.Errorf("%s: a link leads out of the folder: %w", name, largo.ErrNotFound)
			}
			if fd := r.fds[len(r.fds)-1]; fd >= 0 {
				unix.Close(fd)
			}
			r.fds = r.fds[:len(r.fds)-1]
			r.done = r.done[:len(r.done)-1]
		default:
			missing, err := r.step(name, elem)
			if err != nil {
				return "", nil, err
			}
			if missing {
				return r.missing(name, elem)
			}
		}
		r.reached()
	}
	return strings.Join(r.done, "/"), r.hops, nil
}

// step walks one element: a folder or a file is reached, a link's target
// takes its place. missing reports that nothing (or a file where a
// folder should be) is there.
func (r *resolution) step(name, elem string) (missing bool, err error) {
	dir, err := r.dir()
	if err != nil {
		return true, nil // the folder so far is a file
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, elem, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return true, nil
	case err != nil:
		return false, atErr(name, err)
	}
	if !isLink(&st) {
		r.done = append(r.done, elem)
		r.fds = append(r.fds, -1)
		return false, nil
	}
	if r.links++; r.links > maxHops {
		return false, fmt.Errorf("%s: too many links: %w", name, largo.ErrNotFound)
	}
	target, err := readlinkat(dir, elem)
	if err != nil {
		return false, atErr(name, err)
	}
	if strings.HasPrefix(target, "/") || target == "" {
		return false, fmt.Errorf("%s: a link leads out of the folder: %w", name, largo.ErrNotFound)
	}
	r.open = append(r.open, pending{link: largo.Join(strings.Join(r.done, "/"), elem), tail: len(r.queue)})
	r.push(strings.Split(target, "/"))
	return false, nil
}

// dir returns the descriptor of the folder reached so far, opening it
// (relative to the one before, following nothing) the first time.
func (r *resolution) dir() (int, error) {
	i := len(r.fds) - 1
	if r.fds[i] >= 0 {
		return r.fds[i], nil
	}
	fd, err := unix.Openat(r.fds[i-1], r.done[i-1], oPath|unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	r.fds[i] = fd
	return fd, nil
}

// reached records the links whose targets the walk has just finished.
func (r *resolution) reached() {
	for len(r.open) > 0 && r.open[len(r.open)-1].tail == len(r.queue) {
		p := r.open[len(r.open)-1]
		r.open = r.open[:len(r.open)-1]
		r.hops = append(r.hops, largo.Hop{Link: p.link, Target: strings.Join(r.done, "/")})
	}
}

// missing ends a walk at elem, which is not there: it and what follows
// are kept as spelled, unless a ".." follows, which nothing missing can
// be stepped back from.
func (r *resolution) missing(name, elem string) (string, []largo.Hop, error) {
	for _, e := range r.queue {
		if e == ".." {
			return "", nil, fmt.Errorf("%s: a link leads through a missing folder: %w", name, largo.ErrNotFound)
		}
	}
	// spelled returns the physical name elem and the queue's elements
	// from i on reach, as spelled.
	spelled := func(i int) string {
		elems := append(append([]string{}, r.done...), elem)
		for j := len(r.queue) - 1; j >= i; j-- {
			if e := r.queue[j]; e != "" && e != "." {
				elems = append(elems, e)
			}
		}
		return strings.Join(elems, "/")
	}
	// Links still being walked lead where their targets are spelled.
	for len(r.open) > 0 {
		p := r.open[len(r.open)-1]
		r.open = r.open[:len(r.open)-1]
		r.hops = append(r.hops, largo.Hop{Link: p.link, Target: spelled(p.tail)})
	}
	return spelled(0), r.hops, nil
}

// readlinkat returns the target of the link elem of the folder dir.
func readlinkat(dir int, elem string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, elem, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
