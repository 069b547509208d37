package largo

import (
	"context"
	"errors"
	"fmt"
)

// WalkFiles calls fn for each file at or below name in st, with its full
// name: name itself when it is a file, else every file below the folder,
// depth first. Symbolic links are passed over, to files as to folders:
// what they lead to is walked where it is, and a linked folder could form
// a cycle. A folder that cannot be listed is passed
// over and its error returned with the others at the end, but for
// ErrNotFound (a folder gone meanwhile); the walk stops when ctx is done.
// It is the one walk of a tree's files that the server's own records
// (digests, expiry, sidecars) make.
func WalkFiles(ctx context.Context, st Store, name string, fn func(name string, in Info)) error {
	in, err := st.Stat(ctx, name)
	if err != nil {
		return err
	}
	if !in.IsDir {
		fn(name, in)
		return nil
	}
	var errs []error
	stack := []string{name}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for in, err := range st.List(ctx, dir) {
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					errs = append(errs, fmt.Errorf("listing %s: %w", dir, err))
				}
				break
			}
			child := Join(dir, in.Name)
			switch {
			case in.Link:
			case in.IsDir:
				stack = append(stack, child)
			default:
				fn(child, in)
			}
		}
	}
	return errors.Join(errs...)
}
