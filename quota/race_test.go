package quota_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/ingest"
	"largo/quota"
	"largo/record"
	"largo/s3"
	"largo/s3/s3test"
)

// stateStore is a store with a state area, as a server counts it.
type stateStore interface {
	largo.Store
	largo.StateKeeper
}

// onEachStore runs f on a folder, then on a bucket of a real S3 server.
func onEachStore(t *testing.T, f func(t *testing.T, st stateStore)) {
	t.Run("disk", func(t *testing.T) {
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t, s3test.Options{})
		st, err := s3.New(context.Background(), s3.Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

// TestSyncsRaceCountOnce: two instances on one state area write and sync
// at once, each syncing while the other does: every write counts once in
// the usage record, for its user and for its path.
func TestSyncsRaceCountOnce(t *testing.T) {
	onEachStore(t, func(t *testing.T, st stateStore) {
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
