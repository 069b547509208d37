package quota_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/quota"
	"largo/record"
)

// policy is a fixed set of quotas.
type policy struct {
	users map[string]auth.Quota
	paths []auth.Quota
}

func (p policy) UserQuota(u string) (auth.Quota, bool) { q, ok := p.users[u]; return q, ok }
func (p policy) PathQuotas() []auth.Quota              { return p.paths }

type fixture struct {
	dir string
	st  *disk.Store
	k   *quota.Keeper
	pl  *ingest.Pipeline
	// files are the records of files the keepers and the pipelines of
	// the fixture share, as one server's do.
	files *record.Files
}

func newFixture(t *testing.T, pol policy) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	files := record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
	k := quota.New(quota.Config{
		Store:  st,
		State:  st.State(),
		Files:  files,
		Policy: func() quota.Policy { return pol },
		Maker: func(ctx context.Context) string {
			if p, _ := gate.From(ctx); p.LinkID() == "L1" {
				return "alice"
			}
			return ""
		},
	})
	return &fixture{dir: dir, st: st, k: k, files: files, pl: ingest.New(ingest.Config{Store: st, Quota: k, Files: files})}
}

func as(user string) context.Context {
	return gate.With(context.Background(), gate.User(user))
}

// put writes body to name through the pipeline, with its size announced
// (or not, with unknown).
func (f *fixture) put(ctx context.Context, name, body string, unknown bool) error {
	size := int64(len(body))
	if unknown {
		size = -1
	}
	w, err := f.pl.Begin(ctx, ingest.Target{Name: name, Size: size})
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.ReadFrom(strings.NewReader(body)); err != nil {
		return err
	}
	_, err = w.Commit(ctx)
	return err
}

func (f *fixture) remove(ctx context.Context, name string) {
	if err := os.RemoveAll(filepath.Join(f.dir, name)); err != nil {
		panic(err)
	}
	f.pl.Forget(ctx, name)
}

// usage returns the line of a user ("user NAME") or path ("/PATH").
func (f *fixture) usage(t *testing.T, name string) quota.Usage {
	t.Helper()
	for _, l := range f.k.Report() {
		if l.Name() == name {
			return l.Used
		}
	}
	return quota.Usage{}
}

func wantQuotaErr(t *testing.T, err error, text string) {
	t.Helper()
	var qe *largo.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, largo.ErrNoSpace) {
		t.Fatalf("error %v, want a quota's", err)
	}
	if !strings.Contains(qe.Error(), text) {
		t.Fatalf("error %q does not say %q", qe.Error(), text)
	}
}

func TestUserBytesAndFiles(t *testing.T) {
	f := newFixture(t, policy{users: map[string]auth.Quota{"alice": {Bytes: 100, Files: 3}}})
	a := as("alice")
	if err := f.put(a, "a1", strings.Repeat("x", 60), false); err != nil {
		t.Fatal(err)
	}
	err := f.put(a, "a2", strings.Repeat("x", 50), false)
	wantQuotaErr(t, err, "quota of user alice: 100 B, 60 B used")
	if _, err := os.Stat(filepath.Join(f.dir, "a2")); !os.IsNotExist(err) {
		t.Fatal("a refused write left a file")
	}
	// A body of unknown length is cut where the quota ends.
	err = f.put(a, "a2", strings.Repeat("x", 50), true)
	wantQuotaErr(t, err, "user alice")
	// Replacing her own file counts what it adds.
	if err := f.put(a, "a1", strings.Repeat("y", 90), false); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 90, Files: 1}) {
		t.Fatalf("usage %+v, want 90 bytes in 1 file", u)
	}
	for _, n := range []string{"b", "c"} {
		if err := f.put(a, n, "z", false); err != nil {
			t.Fatal(err)
		}
	}
	wantQuotaErr(t, f.put(a, "d", "", false), "3 files, 3 used")
	// Bob has no quota, and his writes do not count for Alice.
	if err := f.put(as("bob"), "e", strings.Repeat("x", 500), false); err != nil {
		t.Fatal(err)
	}
	f.remove(a, "b")
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 91, Files: 2}) {
		t.Fatalf("after a removal: usage %+v, want 91 bytes in 2 files", u)
	}
	if err := f.put(a, "d", "", false); err != nil {
		t.Fatal(err)
	}
	// Bob replaces Alice's file: it is his now.
	if err := f.put(as("bob"), "a1", "b", false); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 1, Files: 2}) {
		t.Fatalf("after Bob replaced her file: usage %+v, want 1 byte in 2 files", u)
	}
}

func TestLinkCountsForMaker(t *testing.T) {
	f := newFixture(t, policy{users: map[string]auth.Quota{"alice": {Bytes: 10}}})
	link := gate.With(context.Background(), gate.LinkHolder("L1"))
	if err := f.put(link, "drop/a", "12345678", false); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 8, Files: 1}) {
		t.Fatalf("usage %+v, want the link's 8 bytes", u)
	}
	wantQuotaErr(t, f.put(link, "drop/b", "12345", false), "quota of the link's maker: 10 B, 8 B used")
}

func TestPathQuota(t *testing.T) {
	f := newFixture(t, policy{paths: []auth.Quota{{Path: "p", Bytes: 100}, {Path: "p/q", Files: 2}}})
	for i, who := range []string{"alice", "bob"} {
		if err := f.put(as(who), fmt.Sprintf("p/q/%d", i), strings.Repeat("x", 30), false); err != nil {
			t.Fatal(err)
		}
	}
	wantQuotaErr(t, f.put(as("carol"), "p/q/3", "x", false), "quota of /p/q: 2 files, 2 used")
	if err := f.put(as("carol"), "p/r", strings.Repeat("x", 40), false); err != nil {
		t.Fatal(err)
	}
	wantQuotaErr(t, f.put(as("carol"), "p/s", "x", false), "quota of /p: 100 B, 100 B used")
	if err := f.put(as("carol"), "elsewhere", strings.Repeat("x", 400), false); err != nil {
		t.Fatal(err)
	}
	// Check (a resumable upload's creation) asks the same.
	wantQuotaErr(t, f.pl.Check(as("carol"), ingest.Target{Name: "p/t", Size: 1}), "/p")
	// A folder removed is counted by the next pass.
	f.remove(as("carol"), "p/q")
	if _, err := f.k.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "/p"); u != (quota.Usage{Bytes: 40, Files: 1}) {
		t.Fatalf("after a pass: /p %+v, want 40 bytes in 1 file", u)
	}
	for _, u := range []string{"user alice", "user bob"} {
		if got := f.usage(t, u); got != (quota.Usage{}) {
			t.Fatalf("after the folder went: %s %+v, want nothing", u, got)
		}
	}
}

// TestConcurrentWritesCannotOverrun: writes in flight hold their size,
// so that of many admitted together, no more than the quota holds
// commit.
func TestConcurrentWritesCannotOverrun(t *testing.T) {
	f := newFixture(t, policy{users: map[string]auth.Quota{"alice": {Bytes: 1000}}})
	a := as("alice")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f.put(a, fmt.Sprintf("f%d", i), strings.Repeat("x", 100), i%2 == 0) == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if u := f.usage(t, "user alice"); u.Bytes > 1000 || ok != 10 || u.Bytes != int64(ok*100) {
		t.Fatalf("%d writes of 100 bytes committed, usage %+v; want 10 and 1000 bytes", ok, u)
	}
}

// TestReconcileMatchesTruth: after random writes, removals and changes
// made behind the keeper's back, one pass counts what a walk finds.
func TestReconcileMatchesTruth(t *testing.T) {
	pol := policy{paths: []auth.Quota{{Path: "a", Bytes: 1 << 40}, {Path: "a/b", Files: 1 << 20}, {Path: "", Files: 1 << 20}}}
	f := newFixture(t, pol)
	rng := rand.New(rand.NewPCG(1, 2))
	users := []string{"u0", "u1", "u2"}
	names := []string{"a/1", "a/2", "a/b/3", "a/b/4", "c/5", "a/b/c/6", "7"}
	owners := map[string]string{} // name -> the user whose write is there
	for range 1000 {
		name := names[rng.IntN(len(names))]
		switch op := rng.IntN(10); {
		case op < 6:
			u := users[rng.IntN(len(users))]
			if err := f.put(as(u), name, strings.Repeat("x", rng.IntN(50)), rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
			owners[name] = u
		case op < 8:
			f.remove(as("u0"), name)
			delete(owners, name)
		default: // behind its back
			p := filepath.Join(f.dir, name)
			if rng.IntN(2) == 0 {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(strings.Repeat("o", 1+rng.IntN(70))), 0o644)
				time.Sleep(time.Millisecond) // another modification time: another ETag
			} else {
				os.Remove(p)
			}
			delete(owners, name)
		}
	}
	lines, err := f.k.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]quota.Usage{}
	filepath.Walk(f.dir, func(p string, fi os.FileInfo, err error) error {
		if fi.IsDir() && fi.Name() == ".largo" {
			return filepath.SkipDir
		}
		if fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(f.dir, p)
		rel = filepath.ToSlash(rel)
		for _, q := range pol.paths {
			if largo.Within(q.Path, rel) {
				want["/"+q.Path] = want["/"+q.Path].Add(quota.Usage{Bytes: fi.Size(), Files: 1})
			}
		}
		if u, ok := owners[rel]; ok {
			want["user "+u] = want["user "+u].Add(quota.Usage{Bytes: fi.Size(), Files: 1})
		}
		return nil
	})
	got := map[string]quota.Usage{}
	for _, l := range lines {
		if l.Used != (quota.Usage{}) {
			got[l.Name()] = l.Used
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a pass:\n got %v\nwant %v", got, want)
	}
}

// renamer is a folder whose renames tell the pipeline, as the front ends
// do.
func (f *fixture) rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(f.dir, to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(f.dir, from), filepath.Join(f.dir, to)); err != nil {
		t.Fatal(err)
	}
	f.pl.Renamed(context.Background(), from, to)
}

// TestRenamed: a file renamed keeps its owner, and counts for the paths
// it went to; a folder's files keep theirs, and its paths are counted
// again by the next pass.
func TestRenamed(t *testing.T) {
	f := newFixture(t, policy{paths: []auth.Quota{{Path: "in", Bytes: 100}}})
	for _, n := range []string{"in/a", "in/d/b", "in/d/c"} {
		if err := f.put(as("alice"), n, "12345", false); err != nil {
			t.Fatal(err)
		}
	}
	f.rename(t, "in/a", "out/a")
	if u := f.usage(t, "/in"); u != (quota.Usage{Bytes: 10, Files: 2}) {
		t.Fatalf("after a file left: /in %+v, want 10 bytes in 2 files", u)
	}
	f.rename(t, "in/d", "out/d")
	if _, err := f.k.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "/in"); u != (quota.Usage{}) {
		t.Fatalf("after its folder left: /in %+v, want nothing", u)
	}
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 15, Files: 3}) {
		t.Fatalf("after renames and a pass: alice %+v, want her 15 bytes in 3 files", u)
	}
	// Her moved file is still hers: replacing it counts what it adds.
	if err := f.put(as("alice"), "out/d/b", "1", false); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "user alice"); u != (quota.Usage{Bytes: 11, Files: 3}) {
		t.Fatalf("after replacing a moved file: alice %+v, want 11 bytes in 3 files", u)
	}
}

// TestReplicasShare: two keepers of one store see each other's writes
// once both have synced.
func TestReplicasShare(t *testing.T) {
	pol := policy{users: map[string]auth.Quota{"alice": {Bytes: 100}}}
	f := newFixture(t, pol)
	// Another instance: records of its own, over the same state.
	files2 := record.NewFiles(record.New(f.st.State(), record.Options{}), record.FilesOptions{})
	other := quota.New(quota.Config{Store: f.st, State: f.st.State(), Files: files2, Policy: func() quota.Policy { return pol }})
	pl2 := ingest.New(ingest.Config{Store: f.st, Quota: other, Files: files2})
	ctx := context.Background()
	if err := f.put(as("alice"), "a", strings.Repeat("x", 70), false); err != nil {
		t.Fatal(err)
	}
	// Within the window, the other one does not know yet.
	if err := pl2.Check(as("alice"), ingest.Target{Name: "b", Size: 50}); err != nil {
		t.Fatalf("before a sync: %v", err)
	}
	if err := f.k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantQuotaErr(t, pl2.Check(as("alice"), ingest.Target{Name: "b", Size: 50}), "quota of user alice: 100 B, 70 B used")
}

// TestSyncKeepsCounting: while the changes are being added to the
// record, they still count: syncing all the time lets no write through
// that the quota has no room for.
func TestSyncKeepsCounting(t *testing.T) {
	f := newFixture(t, policy{users: map[string]auth.Quota{"alice": {Files: 20}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f.k.Sync(ctx)
		}
	}()
	stored := 0
	for i := range 40 {
		if f.put(as("alice"), fmt.Sprintf("f%d", i), "x", false) == nil {
			stored++
		}
	}
	cancel()
	<-done
	if stored != 20 {
		t.Fatalf("%d files stored under a quota of 20", stored)
	}
}

// TestPassCountsOnce: a change made before another instance's pass began
// its walk is in that pass's count, and is not added again when its own
// instance syncs; one made after is.
func TestPassCountsOnce(t *testing.T) {
	pol := policy{paths: []auth.Quota{{Path: "", Files: 100}}}
	f := newFixture(t, pol)
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }
	other := quota.New(quota.Config{Store: f.st, State: f.st.State(), Files: f.files, Policy: func() quota.Policy { return pol }, Now: now})
	f.k = quota.New(quota.Config{Store: f.st, State: f.st.State(), Files: f.files, Policy: func() quota.Policy { return pol }, Now: now})
	f.pl = ingest.New(ingest.Config{Store: f.st, Quota: f.k, Files: f.files})
	ctx := context.Background()
	if err := f.put(as("alice"), "a", "12345", false); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Reconcile(ctx); err != nil { // walks after the write
		t.Fatal(err)
	}
	if err := f.k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, "/"); u != (quota.Usage{Bytes: 5, Files: 1}) {
		t.Fatalf("after the other's pass and a sync: %+v, want the one file once", u)
	}
	// A write after the pass is added.
	if err := f.put(as("alice"), "b", "1", false); err != nil {
		t.Fatal(err)
	}
	if err := f.k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*quota.Keeper{f.k, other} {
		if u := report(k, "/"); u != (quota.Usage{Bytes: 6, Files: 2}) {
			t.Fatalf("after a later write: %+v, want 6 bytes in 2 files", u)
		}
	}
}

func report(k *quota.Keeper, name string) quota.Usage {
	for _, l := range k.Report() {
		if l.Name() == name {
			return l.Used
		}
	}
	return quota.Usage{}
}
