// Package teststore opens the stores that tests of the record layer's
// users run on, one test at a time: a new folder's, and a new bucket's on
// a real S3-compatible server (package s3test, which skips the test where
// it is not installed), each closed when its test ends.
package teststore

import (
	"context"
	"testing"

	"largo"
	"largo/disk"
	"largo/s3"
	"largo/s3/s3test"
)

// Store is a store with a state area: either of largo's.
type Store interface {
	largo.Store
	largo.StateKeeper
}

var (
	_ Store = (*disk.Store)(nil)
	_ Store = (*s3.Store)(nil)
)

// Disk returns the store of a new folder.
func Disk(t testing.TB) *disk.Store {
	t.Helper()
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Bucket returns the store of a new bucket of a real S3 server.
func Bucket(t testing.TB) *s3.Store {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	st, err := s3.New(context.Background(), s3.Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Each runs f on a folder's store, then on a bucket's, as the subtests
// "disk" and "s3".
func Each(t *testing.T, f func(t *testing.T, st Store)) {
	t.Run("disk", func(t *testing.T) { f(t, Disk(t)) })
	t.Run("s3", func(t *testing.T) { f(t, Bucket(t)) })
}
