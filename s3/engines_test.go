package s3

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/record"
	"largo/s3/s3test"
	"largo/storetest"
)

// proxyStore returns a Store on bucket (holding files under prefix) of
// srv, reached through p, prepared for writes, with edit applied first.
func proxyStore(t *testing.T, srv *s3test.Server, p *s3test.Proxy, files map[string]string, cfg Config, edit func(*Store)) *Store {
	t.Helper()
	bucket := srv.MakeBucket(t)
	srv.PutAll(t, bucket, "w/", files)
	cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.Region = bucket, "w", p.URL, srv.Region
	cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if edit != nil {
		edit(s)
	}
	if _, err := s.PrepareWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEngines runs the store through each row of the compatibility
// matrix (a proxy in front of versitygw with the quirks of another S3
// server): the probe finds what the server lacks and the store keeps the
// bucket to one instance where it must (and refuses to share it when
// asked to); then the suites whose paths the quirk is on: the write and
// state suites, with parts small enough for every write to take its
// multipart paths, or the read suite and names that listings encode,
// over pages of two.
func TestEngines(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	// The quirks rewrite versitygw's answers: another engine behind the
	// proxy answers otherwise already (its keys encoded its own way).
	srv.NeedLocal(t)
	small := func(s *Store) { s.partSize, s.partConc, s.maxSingle, s.copyPart = MinPartSize, 2, 8<<20, MinPartSize }
	for _, e := range s3test.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			p := srv.QuirkProxy(t, e.Quirks)
			gap := e.Quirks.Gap()
			s := proxyStore(t, srv, p, nil, Config{}, nil)
			got := s.Engine()
			switch {
			case gap == "" && (!got.Shared || len(got.Gaps) > 0):
				t.Fatalf("the probe found %+v; want the bucket shared", got)
			case gap != "" && (got.Shared || !strings.Contains(strings.Join(got.Gaps, "; "), gap)):
				t.Fatalf("the probe found %+v; want one instance, for %q", got, gap)
			case got.Trailers == e.Quirks.NoTrailers:
				t.Fatalf("the probe found %+v; trailers refused: %v", got, e.Quirks.NoTrailers)
			}
			if gap != "" {
				bucket := srv.MakeBucket(t)
				many, err := New(context.Background(), Config{Bucket: bucket, Endpoint: p.URL, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Instances: InstancesMany})
				if err != nil {
					t.Fatal(err)
				}
				_, err = many.PrepareWrites(context.Background())
				if !errors.Is(err, ErrNotShared) || !strings.Contains(err.Error(), gap) || strings.Contains(err.Error(), "\n") {
					t.Errorf("InstancesMany: %v; want one line naming %q", err, gap)
				}
			}
			t.Run("ETags", func(t *testing.T) {
				testETags(t, proxyStore(t, srv, p, map[string]string{"f.txt": "f"}, Config{}, nil))
			})
			// The suites that take the quirk's paths: the reads for
			// what listings and ETags look like, the writes and the
			// records for the rest.
			q := e.Quirks
			if q.PathEncodedKeys || q.RepeatedPrefixes || q.UnquotedETags {
				t.Run("Read", func(t *testing.T) {
					storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
						return proxyStore(t, srv, p, files, Config{}, nil)
					})
				})
			}
			if q.PathEncodedKeys || q.RepeatedPrefixes {
				t.Run("Names", func(t *testing.T) { testEncodedNames(t, proxyStore(t, srv, p, encodedNames(), Config{}, nil)) })
				return
			}
			t.Run("Write", func(t *testing.T) {
				storetest.RunWrite(t, func(t *testing.T, files map[string]string) storetest.WritableStore {
					s := proxyStore(t, srv, p, files, Config{}, small)
					t.Cleanup(func() { noMultipart(t, srv, s) })
					return s
				})
			})
			t.Run("State", func(t *testing.T) {
				s := proxyStore(t, srv, p, nil, Config{}, nil)
				if s.Engine().Shared {
					storetest.RunState(t, s.State())
					return
				}
				testLocalRecords(t, s.State())
			})
		})
	}
}

// testLocalRecords checks the records of a state that refuses conditional
// writes (one instance): package record makes them under its own lock, so
// that of concurrent creates of one key exactly one wins, and concurrent
// updates all count.
func testLocalRecords(t *testing.T, st largo.State) {
	ctx := context.Background()
	if _, ok := st.(largo.StateCreator); !ok {
		t.Fatal("no StateCreator")
	}
	if err := st.(largo.StateCreator).Create(ctx, "t/x", []byte("x")); !errors.Is(err, largo.ErrUnsupported) {
		t.Fatalf("Create on a state kept by one instance: %v; want ErrUnsupported", err)
	}
	tab := record.NewTable[int](record.New(st, record.Options{}), "t/", record.TableOptions{})
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = tab.Create(ctx, "one", i) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, largo.ErrExist):
			t.Errorf("Create: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d creates of one record won; want 1", won, n)
	}
	for range n {
		wg.Go(func() {
			if _, err := tab.Update(ctx, "count", func(v *int, _ bool) (record.Change, error) { *v++; return record.Write, nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if v, err := tab.Get(ctx, "count"); err != nil || v != n {
		t.Errorf("after %d updates: %d, %v", n, v, err)
	}
}

// encodedNames are files whose names a url-encoded listing encodes, in
// folders enough for pages of two to break among common prefixes.
func encodedNames() map[string]string {
	files := map[string]string{"a+b.txt": "plus", "c d.txt": "space", "100%.csv": "percent", "x+y/in": "1", "p q/in": "2"}
	for i := range 5 {
		files[fmt.Sprintf("d%d/in", i)] = "d"
	}
	return files
}

// testEncodedNames lists the root of encodedNames over pages of two,
// reads each file listed, and removes a folder whose name has a plus.
func testEncodedNames(t *testing.T, s *Store) {
	ctx := context.Background()
	s.page = 2
	var got []string
	for in, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if in.IsDir {
			got = append(got, in.Name+"/")
			continue
		}
		got = append(got, in.Name)
		if c := readAll(t, s, in.Name); c != encodedNames()[in.Name] {
			t.Errorf("%s: %q", in.Name, c)
		}
	}
	slices.Sort(got)
	want := []string{"100%.csv", "a+b.txt", "c d.txt", "d0/", "d1/", "d2/", "d3/", "d4/", "p q/", "x+y/"}
	if !slices.Equal(got, want) {
		t.Errorf("List = %q; want %q", got, want)
	}
	if err := s.Remove(ctx, "x+y", largo.RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "x+y/in"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("x+y/in after its folder's removal: %v", err)
	}
}

// testETags checks that the ETags of a file, however the server quotes
// them, are HTTP's entity tags (quoted) and the same from Stat, List and
// a write, and that a removal under one of them applies it.
func testETags(t *testing.T, s *Store) {
	ctx := context.Background()
	in, err := s.Stat(ctx, "f.txt")
	if err != nil || !strings.HasPrefix(in.ETag, `"`) || !strings.HasSuffix(in.ETag, `"`) || len(in.ETag) < 3 {
		t.Fatalf("Stat = %+v, %v; want a quoted ETag", in, err)
	}
	for l, err := range s.List(ctx, "") {
		if err != nil || l.ETag != in.ETag {
			t.Errorf("List: %+v, %v; want the ETag %s", l, err, in.ETag)
		}
	}
	u, err := s.Create(ctx, "f.txt", largo.CreateOptions{Size: 3, Condition: largo.Condition{IfMatch: in.ETag}})
	if err != nil {
		t.Fatal(err)
	}
	u.Write([]byte("new"))
	w, _, err := u.Commit(ctx, largo.Condition{IfMatch: in.ETag})
	if err != nil {
		t.Fatalf("a write under If-Match %s: %v", in.ETag, err)
	}
	if now, _ := s.Stat(ctx, "f.txt"); now.ETag != w.ETag || now.ETag == in.ETag {
		t.Errorf("after the write: ETag %s, the write's %s, before %s", now.ETag, w.ETag, in.ETag)
	}
	if err := s.Remove(ctx, "f.txt", largo.RemoveOptions{Condition: largo.Condition{IfMatch: in.ETag}}); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("removal under the old ETag: %v; want a failed precondition", err)
	}
	if err := s.Remove(ctx, "f.txt", largo.RemoveOptions{Condition: largo.Condition{IfMatch: w.ETag}}); err != nil {
		t.Errorf("removal under the new ETag: %v", err)
	}
}
