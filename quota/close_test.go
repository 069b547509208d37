package quota_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"largo/auth"
	"largo/ingest"
	"largo/quota"
)

// TestCloseKeepsUsage: a keeper stopped well within its sync period
// still records what it counted once Close returns, and a keeper started
// afterwards admits the next write against it.
func TestCloseKeepsUsage(t *testing.T) {
	pol := policy{users: map[string]auth.Quota{"alice": {Bytes: 1000}}}
	f := newFixture(t, pol)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := f.k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { f.k.Run(ctx, time.Hour, 0); close(done) }()
	if err := f.put(as("alice"), "one", strings.Repeat("x", 600), false); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if err := f.k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	next := quota.New(quota.Config{Store: f.st, State: f.st.State(), Policy: func() quota.Policy { return pol }})
	found, err := next.Load(context.Background())
	if err != nil || !found {
		t.Fatalf("Load after Close: %v, %v; want the record", found, err)
	}
	if u := report(next, "user alice"); u != (quota.Usage{Bytes: 600, Files: 1}) {
		t.Fatalf("after Close, the record holds alice %+v; want 600 bytes in 1 file", u)
	}
	pl := ingest.New(ingest.Config{Store: f.st, Quota: next})
	wantQuotaErr(t, pl.Check(as("alice"), ingest.Target{Name: "two", Size: 600}), "quota of user alice: 1000 B, 600 B used")
}
