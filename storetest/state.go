package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"largo"
)

// stateCase is one case of RunState: a check of the records of sts, one
// or more instances of one store's state (two processes serving one folder
// or bucket). Each case uses keys of its own and leaves none behind.
type stateCase struct {
	name  string
	check func(t *testing.T, sts []largo.State)
}

// stateCases are RunState's cases.
var stateCases = []stateCase{
	{"Records", testRecords},
	{"BadKeys", testBadKeys},
	{"Create", testStateCreate},
	{"Swap", testStateSwap},
}

// sharedCases are RunStateShared's: those whose takers take turns among
// the instances.
var sharedCases = []stateCase{
	{"Create", testStateCreate},
	{"Swap", testStateSwap},
}

// RunState runs the suite of a store's state records: written whole, read
// back, replaced, listed by prefix, removed; a missing record is
// ErrNotFound, and removing one is no error; and, for a
// largo.StateCreator, records created only where none is; for a
// largo.StateSwapper, records replaced and removed only as they were read.
// The cases share st, each under keys of its own.
func RunState(t *testing.T, st largo.State) {
	for _, c := range stateCases {
		t.Run(c.name, func(t *testing.T) { c.check(t, []largo.State{st}) })
	}
}

// RunStateShared runs the creations and takeovers of RunState through a
// and b, two instances of one store (two processes serving one folder or
// bucket): of concurrent creates of one key, or swaps of one version,
// through both, exactly one succeeds.
func RunStateShared(t *testing.T, a, b largo.State) {
	for _, c := range sharedCases {
		t.Run(c.name, func(t *testing.T) { c.check(t, []largo.State{a, b}) })
	}
}

// testRecords writes, reads, replaces, lists and removes records.
func testRecords(t *testing.T, sts []largo.State) {
	st := sts[0]
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
}

// testBadKeys writes records under keys that are no keys.
func testBadKeys(t *testing.T, sts []largo.State) {
	for _, bad := range []string{"", "../x", "a//b"} {
		if err := sts[0].Put(context.Background(), bad, nil); err == nil {
			t.Errorf("Put %q succeeded", bad)
		}
	}
}

// testStateCreate checks a State that creates records only where none is:
// of concurrent creates of one key exactly one succeeds, the others get
// ErrExist. The creators take turns among sts.
func testStateCreate(t *testing.T, sts []largo.State) {
	st := sts[0]
	var scs []largo.StateCreator
	for _, s := range sts {
		sc, ok := s.(largo.StateCreator)
		if !ok {
			t.Skip("no largo.StateCreator")
		}
		scs = append(scs, sc)
	}
	ctx := context.Background()
	const key = "lease/one"
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = scs[i%len(scs)].Create(ctx, key, []byte{byte('a' + i)}) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("creates %d and %d both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, largo.ErrExist):
			t.Errorf("create %d: %v; want ErrExist", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no create succeeded")
	}
	if b, err := st.Get(ctx, key); err != nil || string(b) != string(rune('a'+won)) {
		t.Errorf("record = %q, %v; want the winner's", b, err)
	}
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := scs[len(scs)-1].Create(ctx, key, []byte("again")); err != nil {
		t.Errorf("Create after Delete: %v", err)
	}
	st.Delete(ctx, key)
}

// testStateSwap checks a State that replaces and removes records only as
// they were read: of concurrent takeovers of one version exactly one
// succeeds, the others get ErrPrecondition; a stale or missing version
// neither replaces nor removes. The takers take turns among sts, each
// an instance of one store.
func testStateSwap(t *testing.T, sts []largo.State) {
	st := sts[0]
	var sws []largo.StateSwapper
	for _, s := range sts {
		sw, ok := s.(largo.StateSwapper)
		if !ok {
			t.Skip("no largo.StateSwapper")
		}
		sws = append(sws, sw)
	}
	sw := sws[0]
	ctx := context.Background()
	const key = "lease/swap"
	if _, _, err := sw.GetVersion(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("GetVersion of a missing record: %v; want ErrNotFound", err)
	}
	if err := st.Put(ctx, key, []byte("expired")); err != nil {
		t.Fatal(err)
	}
	b, v0, err := sw.GetVersion(ctx, key)
	if err != nil || string(b) != "expired" || v0 == "" {
		t.Fatalf("GetVersion = %q, %q, %v", b, v0, err)
	}
	const n = 8
	for round := range 3 {
		// Every taker read the same version; exactly one may replace it.
		var wg sync.WaitGroup
		errs := make([]error, n)
		vers := make([]string, n)
		for i := range n {
			wg.Go(func() {
				vers[i], errs[i] = sws[i%len(sws)].Swap(ctx, key, []byte{byte('a' + round), byte('a' + i)}, v0)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("round %d: takeovers %d and %d both succeeded", round, won, i)
			case err == nil:
				won = i
			case !errors.Is(err, largo.ErrPrecondition):
				t.Errorf("round %d: takeover %d: %v; want ErrPrecondition", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no takeover succeeded", round)
		}
		b, v1, err := sw.GetVersion(ctx, key)
		if err != nil || string(b) != string([]byte{byte('a' + round), byte('a' + won)}) {
			t.Fatalf("round %d: record = %q, %v; want the winner's", round, b, err)
		}
		if v1 == v0 {
			t.Errorf("round %d: the version did not change with the record", round)
		}
		if vers[won] != v1 {
			t.Errorf("round %d: Swap returned version %q, GetVersion %q", round, vers[won], v1)
		}
		v0 = v1
	}
	if _, err := sw.Swap(ctx, key, []byte("late"), "stale"); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("Swap of a stale version: %v; want ErrPrecondition", err)
	}
	if err := sw.DeleteIf(ctx, key, "stale"); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("DeleteIf of a stale version: %v; want ErrPrecondition", err)
	}
	if _, err := st.Get(ctx, key); err != nil {
		t.Errorf("the record went with a stale DeleteIf: %v", err)
	}
	if err := sw.DeleteIf(ctx, key, v0); err != nil {
		t.Errorf("DeleteIf of the current version: %v", err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Get after DeleteIf: %v; want ErrNotFound", err)
	}
	if err := sw.DeleteIf(ctx, key, v0); err != nil {
		t.Errorf("DeleteIf of a record gone: %v; want no error", err)
	}
	if _, err := sw.Swap(ctx, key, []byte("back"), v0); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("Swap of a record gone: %v; want ErrPrecondition", err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("a Swap of a record gone made it: %v", err)
	}
}
