package quota_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"largo/auth"
	"largo/quota"
)

// TestBeside: what is kept beside a file (dead properties) counts in
// bytes for who set it and for its paths, is refused past a quota, and
// follows the file: renamed, removed, and counted again by a pass; a
// folder made counts as one file while it is there.
func TestBeside(t *testing.T) {
	f := newFixture(t, policy{
		users: map[string]auth.Quota{"alice": {Bytes: 1000, Files: 3}},
		paths: []auth.Quota{{Path: "p", Bytes: 5000}},
	})
	a := as("alice")
	ctx := context.Background()
	if err := f.put(a, "p/doc", "0123456789", false); err != nil {
		t.Fatal(err)
	}
	if err := f.pl.KeepBeside(a, "p/doc", 200); err != nil {
		t.Fatal(err)
	}
	wantQuotaErr(t, f.pl.KeepBeside(a, "p/other", 900), "quota of user alice: 1000 B, 210 B used")
	// A change counts what it adds: 200 bytes grown to 700.
	if err := f.pl.KeepBeside(a, "p/doc", 700); err != nil {
		t.Fatalf("properties grown within the quota: %v", err)
	}
	want := func(what string, user, path quota.Usage) {
		t.Helper()
		if u := f.usage(t, "user alice"); u != user {
			t.Errorf("%s: alice %+v; want %+v", what, u, user)
		}
		if u := f.usage(t, "/p"); u != path {
			t.Errorf("%s: /p %+v; want %+v", what, u, path)
		}
	}
	want("a file and its properties", quota.Usage{Bytes: 710, Files: 1}, quota.Usage{Bytes: 710, Files: 1})
	// A folder made counts as a file: two more fill her files.
	for _, d := range []string{"p/d1", "p/d2"} {
		if err := f.pl.CheckFolder(a, d); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(f.dir, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
		f.pl.FolderMade(a, d)
	}
	wantQuotaErr(t, f.pl.CheckFolder(a, "p/d3"), "quota of user alice: 3 files, 3 used")
	want("two folders made", quota.Usage{Bytes: 710, Files: 3}, quota.Usage{Bytes: 710, Files: 3})
	// A pass counts the same.
	if _, err := f.k.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want("after a pass", quota.Usage{Bytes: 710, Files: 3}, quota.Usage{Bytes: 710, Files: 3})
	// Renamed out of /p, they follow; removed, they go.
	f.rename(t, "p/doc", "q/doc")
	f.rename(t, "p/d1", "q/d1")
	if _, err := f.k.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want("moved out of /p", quota.Usage{Bytes: 710, Files: 3}, quota.Usage{Files: 1})
	f.remove(a, "q/doc")
	f.remove(a, "p/d2")
	want("removed", quota.Usage{Files: 1}, quota.Usage{})
	// A folder removed behind the server's back stops counting at the
	// next pass.
	if err := os.Remove(filepath.Join(f.dir, "q", "d1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want("a folder gone", quota.Usage{}, quota.Usage{})
}
