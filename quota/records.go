package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"largo"
)

// The quota's records of single names (owners, what is kept beside a
// name, folders made) are JSON in the state area, each kind under its
// prefix and keyed by the SHA-256 of the name it describes, as package
// digests keys its own: a flat folder of fixed-length keys, whatever the
// names.

// named is a record that says the name it describes.
type named interface{ named() string }

// nameKey is the state key of the record of name under prefix.
func nameKey(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])
}

// getRecord reads the record of name under prefix; one that does not
// describe name is damaged, an error wrapping largo.ErrNotFound.
func getRecord[T named](ctx context.Context, st largo.State, prefix, name string) (T, error) {
	var v T
	b, err := st.Get(ctx, nameKey(prefix, name))
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil || v.named() != name {
		var zero T
		return zero, fmt.Errorf("quota record of %s: damaged: %w", name, largo.ErrNotFound)
	}
	return v, nil
}

// putRecord writes v under prefix.
func putRecord[T named](ctx context.Context, st largo.State, prefix string, v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.Put(ctx, nameKey(prefix, v.named()), b)
}

// stored is a record as read, with its key and its version when the state
// swaps records (largo.StateSwapper), so that it can be dropped only as
// it was read.
type stored[T named] struct {
	v       T
	key     string
	version string
}

// listRecords yields every record under prefix; a damaged one is the
// zero T (its name empty).
func listRecords[T named](ctx context.Context, st largo.State, prefix string) iter.Seq2[stored[T], error] {
	return func(yield func(stored[T], error) bool) {
		sw, _ := st.(largo.StateSwapper)
		for r, err := range st.List(ctx, prefix) {
			if err != nil {
				yield(stored[T]{}, err)
				return
			}
			var b []byte
			var ver string
			if sw != nil {
				b, ver, err = sw.GetVersion(ctx, r.Key)
			} else {
				b, err = st.Get(ctx, r.Key)
			}
			if errors.Is(err, largo.ErrNotFound) {
				continue // dropped meanwhile
			}
			if err != nil {
				if !yield(stored[T]{}, err) {
					return
				}
				continue
			}
			var v T
			if json.Unmarshal(b, &v) != nil || nameKey(prefix, v.named()) != r.Key {
				var zero T
				v = zero
			}
			if !yield(stored[T]{v: v, key: r.Key, version: ver}, nil) {
				return
			}
		}
	}
}

// dropKey removes the record key, unless it changed since it was read
// at version.
func (k *Keeper) dropKey(ctx context.Context, key, version string) error {
	if sw, ok := k.cfg.State.(largo.StateSwapper); ok && version != "" {
		err := sw.DeleteIf(ctx, key, version)
		if errors.Is(err, largo.ErrPrecondition) {
			return nil // written again: it describes something newer
		}
		if !errors.Is(err, largo.ErrUnsupported) {
			return err
		}
	}
	return k.cfg.State.Delete(ctx, key)
}
