package s3

import (
	"context"
	"testing"

	"largo"
	"largo/s3/s3test"
	"largo/storetest"
)

// newStore returns a Store on bucket with prefix, on srv.
func newStore(t *testing.T, srv *s3test.Server, bucket, prefix string) *Store {
	t.Helper()
	s, err := New(context.Background(), Config{
		Bucket:    bucket,
		Prefix:    prefix,
		Endpoint:  srv.Endpoint,
		Region:    srv.Region,
		AccessKey: srv.AccessKey,
		SecretKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		bucket := srv.MakeBucket(t)
		for name, content := range files {
			srv.PutTo(t, bucket, name, []byte(content))
		}
		return newStore(t, srv, bucket, "")
	})
}

// TestStorePrefix runs the suite on a prefix of a bucket that holds other
// keys beside it, which must not show.
func TestStorePrefix(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		bucket := srv.MakeBucket(t)
		for name, content := range files {
			srv.PutTo(t, bucket, "site/v1/"+name, []byte(content))
		}
		for _, k := range []string{"outside.txt", "site/v10/x", "site/v1.txt", "site/v1-docs/a"} {
			srv.PutTo(t, bucket, k, []byte("not served"))
		}
		return newStore(t, srv, bucket, "/site/v1/")
	})
}
