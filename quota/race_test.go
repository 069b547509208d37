package quota_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"largo/auth"
	"largo/ingest"
	"largo/internal/teststore"
	"largo/quota"
	"largo/record"
)

// TestSyncsRaceCountOnce: two instances on one state area write and sync
// at once, each syncing while the other does: every write counts once in
// the usage record, for its user and for its path.
func TestSyncsRaceCountOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st teststore.Store) {
		pol := policy{users: map[string]auth.Quota{"alice": {Files: 1000}}, paths: []auth.Quota{{Path: "", Files: 1000}}}
		const writers, each, size = 3, 5, 3
		ctx := context.Background()
		var keepers []*quota.Keeper
		var all sync.WaitGroup
		for i := range 2 {
			files := record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
			k := quota.New(quota.Config{Store: st, State: st.State(), Files: files, Policy: func() quota.Policy { return pol }})
			if _, err := k.Load(ctx); err != nil {
				t.Fatal(err)
			}
			keepers = append(keepers, k)
			f := &fixture{k: k, files: files, pl: ingest.New(ingest.Config{Store: st, Quota: k, Files: files})}
			var writes sync.WaitGroup
			for w := range writers {
				writes.Go(func() {
					for n := range each {
						if err := f.put(as("alice"), fmt.Sprintf("f%d-%d-%d", i, w, n), "xyz", false); err != nil {
							t.Error(err)
						}
					}
				})
			}
			all.Go(func() {
				done := make(chan struct{})
				go func() { writes.Wait(); close(done) }()
				for {
					select {
					case <-done:
						return
					default:
					}
					if err := k.Sync(ctx); err != nil {
						t.Errorf("instance %d: Sync: %v", i, err)
						return
					}
				}
			})
		}
		all.Wait()
		for i, k := range keepers {
			if err := k.Close(ctx); err != nil {
				t.Fatalf("instance %d: Close: %v", i, err)
			}
		}
		fresh := quota.New(quota.Config{Store: st, State: st.State(), Policy: func() quota.Policy { return pol }})
		if found, err := fresh.Load(ctx); err != nil || !found {
			t.Fatalf("Load: %v, %v", found, err)
		}
		want := quota.Usage{Bytes: 2 * writers * each * size, Files: 2 * writers * each}
		for _, line := range []string{"user alice", "/"} {
			if u := report(fresh, line); u != want {
				t.Errorf("%s: %+v in the record; want %+v", line, u, want)
			}
		}
	})
}
