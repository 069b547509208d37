package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"largo"
)

// RunState runs the suite of a store's state records: written whole, read
// back, replaced, listed by prefix, removed; a missing record is
// ErrNotFound, and removing one is no error; and, for a
// largo.StateCreator, records created only where none is; for a
// largo.StateSwapper, records replaced and removed only as they were read.
func RunState(t *testing.T, st largo.State) {
	ctx := context.Background()
	if _, err := st.Get(ctx, "suite/missing"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Get of a missing record: %v; want ErrNotFound", err)
	}
	for _, kv := range [][2]string{{"suite/a", "one"}, {"suite/b", "two"}, {"other/c", "three"}, {"suite/a", "one again"}} {
		if err := st.Put(ctx, kv[0], []byte(kv[1])); err != nil {
			t.Fatalf("Put %s: %v", kv[0], err)
		}
	}
	if b, err := st.Get(ctx, "suite/a"); err != nil || string(b) != "one again" {
		t.Errorf("Get suite/a = %q, %v", b, err)
	}
	var keys []string
	for rec, err := range st.List(ctx, "suite/") {
		if err != nil {
			t.Fatal(err)
		}
		if rec.ModTime.IsZero() {
			t.Errorf("%s: no modification time", rec.Key)
		}
		keys = append(keys, rec.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"suite/a", "suite/b"}) {
		t.Errorf("List suite/ = %v", keys)
	}
	for _, k := range []string{"suite/a", "suite/a", "suite/b", "other/c"} {
		if err := st.Delete(ctx, k); err != nil {
			t.Errorf("Delete %s: %v", k, err)
		}
	}
	if _, err := st.Get(ctx, "suite/a"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	runStateCreate(t, st)
	runStateSwap(t, st)
	for _, bad := range []string{"", "../x", "a//b"} {
		if err := st.Put(ctx, bad, nil); err == nil {
			t.Errorf("Put %q succeeded", bad)
		}
	}
}

// RunStateShared runs the takeovers of RunState through a and b, two
// instances of one store (two processes serving one folder or bucket):
// of concurrent swaps of one version through both, exactly one succeeds.
func RunStateShared(t *testing.T, a, b largo.State) {
	runStateSwap(t, a, b)
}
