package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
	"largo/internal/poll"
	"largo/proc"
	"largo/s3/s3test"
	"largo/storetest"
)

// newWriteStore returns a Store on a fresh bucket of srv holding files,
// with the write settings edit gives it.
func newWriteStore(t *testing.T, srv *s3test.Server, files map[string]string, edit func(*Store)) *Store {
	t.Helper()
	bucket := srv.MakeBucket(t)
	srv.PutAll(t, bucket, "w/", files)
	s := newStore(t, srv, bucket, "w")
	if edit != nil {
		edit(s)
	}
	return s
}

// TestStoreWrite runs the write suite twice: with the default settings,
// where every body of the suite goes in one PUT, and with the smallest
// parts and a low limit on one PUT, so that known lengths go as streamed
// parts, unknown ones as buffered parts sent in the background, and
// adopted copies in ranges.
func TestStoreWrite(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	for _, tt := range []struct {
		name string
		edit func(*Store)
	}{
		{"Defaults", nil},
		{"SmallParts", func(s *Store) {
			s.partSize, s.partConc, s.maxSingle, s.copyPart = MinPartSize, 3, 8<<20, MinPartSize
		}},
		{"OnePartAtATime", func(s *Store) {
			s.partSize, s.partConc, s.maxSingle = MinPartSize, 1, 8<<20
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storetest.RunWrite(t, func(t *testing.T, files map[string]string) storetest.WritableStore {
				s := newWriteStore(t, srv, files, tt.edit)
				t.Cleanup(func() { noMultipart(t, srv, s) })
				return s
			})
		})
	}
}

// noMultipart fails the test if a multipart upload is left in s's bucket.
func noMultipart(t *testing.T, srv *s3test.Server, s *Store) {
	t.Helper()
	for _, key := range srv.Uploads(t, s.bucket, "") {
		t.Errorf("multipart upload left: %s", key)
	}
	for _, key := range srv.Keys(t, s.bucket, s.prefix+largo.StateDir+"/"+uploadsKey) {
		t.Errorf("record of a multipart upload left: %s", key)
	}
}

// TestWriteMemory checks the part buffers of a body of unknown length:
// never more than PartConcurrency at once, whatever the body's size.
func TestWriteParts(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newWriteStore(t, srv, nil, func(s *Store) { s.partSize, s.partConc = MinPartSize, 2 })
	ctx := context.Background()
	u, err := s.Create(ctx, "big.bin", largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	bp := u.(*upload).send.(*bufferedParts)
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	h := sha256.New()
	for range 23 {
		if _, err := u.Write(chunk); err != nil {
			t.Fatal(err)
		}
		h.Write(chunk)
		if inFlight := len(bp.slots); inFlight+1 > s.partConc {
			t.Fatalf("%d buffers at once; want at most %d", inFlight+1, s.partConc)
		}
	}
	in, created, err := u.Commit(ctx, largo.Condition{})
	if err != nil || !created || in.Size != 23<<20 {
		t.Fatalf("Commit = %+v, %v, %v", in, created, err)
	}
	if bp.next != 5 {
		t.Errorf("%d parts; want 5 (4 of 5 MiB and the rest)", bp.next)
	}
	f, err := s.Open(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := sha256.New()
	io.Copy(g, f)
	if !bytes.Equal(g.Sum(nil), h.Sum(nil)) {
		t.Fatal("stored bytes differ")
	}
	noMultipart(t, srv, s)
}

// TestAdopt moves a staged object into place: copied inside the store, the
// source removed, under conditions, and in ranges when it is larger than
// one copy may carry.
func TestAdopt(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	ctx := context.Background()
	data := strings.Repeat("adopted ", 2<<20) // 16 MiB
	for _, tt := range []struct {
		name     string
		copyPart int64
		cond     largo.Condition
	}{
		{"plain copy", maxCopyPart, largo.Condition{}},
		{"in ranges", MinPartSize, largo.Condition{}},
		{"under a condition", maxCopyPart, largo.Condition{IfNoneMatch: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newWriteStore(t, srv, map[string]string{".largo/tus/up1": data, "old": "old"}, func(s *Store) { s.copyPart = tt.copyPart })
			opt := largo.CreateOptions{Size: int64(len(data)), Condition: tt.cond}
			u, err := s.Adopt(ctx, "dir/file.bin", ".largo/tus/up1", opt)
			if err != nil {
				t.Fatal(err)
			}
			in, created, err := u.Commit(ctx, tt.cond)
			if err != nil || !created || in.ETag == "" {
				t.Fatalf("Commit = %+v, %v, %v", in, created, err)
			}
			if got := readAll(t, s, "dir/file.bin"); got != data {
				t.Fatalf("copied %d bytes; want %d", len(got), len(data))
			}
			if _, err := s.headKey(ctx, s.key(".largo/tus/up1")); err == nil {
				t.Error("the staged object is still there")
			}
			noMultipart(t, srv, s)
		})
	}
	s := newWriteStore(t, srv, map[string]string{".largo/tus/up2": data, "old": "old"}, nil)
	u, err := s.Adopt(ctx, "old", ".largo/tus/up2", largo.CreateOptions{Condition: largo.Condition{IfNoneMatch: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := u.Commit(ctx, largo.Condition{IfNoneMatch: true}); !errors.Is(err, largo.ErrPrecondition) {
		t.Fatalf("adopt over an existing file with If-None-Match: %v", err)
	}
	if readAll(t, s, "old") != "old" {
		t.Fatal("the failed adoption changed the target")
	}
	// The pipeline checks that staged names are under the state folder.
	for _, staged := range []string{"outside", ".largo/tus/missing"} {
		if _, err := s.Adopt(ctx, "x", staged, largo.CreateOptions{}); err == nil {
			t.Errorf("Adopt(%q) succeeded", staged)
		}
	}
	noMultipart(t, srv, s)
}

func readAll(t *testing.T, s *Store, name string) string {
	t.Helper()
	f, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAbortCutsThePut aborts a streamed PUT whose whole body was written:
// the held-back byte never reaches the server, which stores nothing.
func TestAbortCutsThePut(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newWriteStore(t, srv, nil, nil)
	ctx := context.Background()
	body := bytes.Repeat([]byte("z"), 3<<20)
	read0 := serverRead(t, srv)
	u, err := s.Create(ctx, "cut.bin", largo.CreateOptions{Size: int64(len(body))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(body); err != nil {
		t.Fatal(err)
	}
	// The server has taken all it can: it has read every byte but the
	// held-back one, and reads no more.
	read, settled := poll.Steady(10*time.Second, 20*time.Millisecond, 5, func() int64 { return serverRead(t, srv) - read0 })
	if !settled || read < int64(len(body))-1 {
		t.Fatalf("the server read %d bytes of a %d-byte body (settled: %v); want all but the last", read, len(body), settled)
	}
	if _, err := s.Stat(ctx, "cut.bin"); !errors.Is(err, largo.ErrNotFound) {
		t.Fatalf("before the commit, Stat = %v", err)
	}
	u.Abort()
	if _, err := s.Stat(ctx, "cut.bin"); !errors.Is(err, largo.ErrNotFound) {
		t.Fatalf("after the abort, Stat = %v", err)
	}
	// A commit under another condition than the one the PUT carries.
	u, _ = s.Create(ctx, "cond.bin", largo.CreateOptions{Size: 1})
	u.Write([]byte("1"))
	if _, _, err := u.Commit(ctx, largo.Condition{IfNoneMatch: true}); !errors.Is(err, largo.ErrUnsupported) {
		t.Errorf("commit under a condition not stated at creation: %v", err)
	}
}

// serverRead returns the bytes the server's process has read so far, from
// its sockets and files.
func serverRead(t *testing.T, srv *s3test.Server) int64 {
	t.Helper()
	srv.NeedLocal(t)
	st, err := proc.ReadIO(srv.PID)
	if err != nil {
		t.Fatal(err)
	}
	return st.RChar
}

// TestPrepareWrites probes the server (versitygw applies conditions and
// takes checksum trailers), and leaves no probe behind.
func TestPrepareWrites(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newWriteStore(t, srv, map[string]string{"f": "f"}, nil)
	ctx := context.Background()
	if _, err := s.PrepareWrites(ctx); err != nil {
		t.Fatal(err)
	}
	if e := s.Engine(); !e.Shared || len(e.Gaps) != 0 || !e.Trailers {
		t.Errorf("versitygw takes conditional writes and trailers; the probe found %+v", e)
	}
	if keys := srv.Keys(t, s.bucket, ""); !slices.Equal(keys, []string{"w/f"}) {
		t.Errorf("keys after the probe: %q; want only w/f", keys)
	}
	noMultipart(t, srv, s)

	// A bucket that refuses the writes (here: gone since the start):
	// refused with one line.
	gone := newStore(t, srv, s.bucket, "w")
	gone.bucket = "no-such-bucket"
	if _, err := gone.PrepareWrites(ctx); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("PrepareWrites on a missing bucket: %v", err)
	}
}

// TestSweep aborts the multipart uploads left behind, and only those.
// TestSweep: the sweep aborts the multipart uploads of writes that a
// crashed instance left, and no other: not another application's in the
// same bucket (even under the store's prefix), not an upload still in
// progress here.
func TestSweep(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newWriteStore(t, srv, nil, func(s *Store) { s.partSize = MinPartSize })
	ctx := context.Background()
	for _, k := range []string{"w/theirs.bin", "w/" + largo.StateDir + "/tus/abc", "outside"} {
		if _, err := s.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &k}); err != nil {
			t.Fatal(err)
		}
	}
	// Two uploads of this store, past their first part: one goes on, the
	// other's instance "crashes" (forgets it without aborting it).
	part := bytes.Repeat([]byte("m"), MinPartSize+1)
	mine, err := s.Create(ctx, "mine.bin", largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Abort()
	mine.Write(part)
	before := map[any]bool{}
	s.active.Range(func(id, _ any) bool { before[id] = true; return true })
	crashed, err := s.Create(ctx, "crashed.bin", largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	crashed.Write(part)
	poll.Wait(t, 10*time.Second, "the crashed upload to begin its multipart upload", func() bool {
		return len(srv.Uploads(t, s.bucket, "w/crashed.bin")) > 0
	})
	s.active.Range(func(id, _ any) bool {
		if !before[id] {
			s.active.Delete(id) // what a new process would not know
		}
		return true
	})

	if n, err := s.Sweep(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("Sweep of uploads an hour old = %d, %v; want 0", n, err)
	}
	n, err := s.Sweep(ctx, time.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 (crashed.bin)", n, err)
	}
	if got := strings.Join(srv.Uploads(t, s.bucket, ""), ","); got != "outside,w/.largo/tus/abc,w/mine.bin,w/theirs.bin" {
		t.Errorf("multipart uploads after the sweep: %s", got)
	}
}

func TestState(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newWriteStore(t, srv, nil, nil)
	storetest.RunState(t, s.State())
	if keys := srv.Keys(t, s.bucket, ""); len(keys) != 0 {
		t.Errorf("keys left: %v", keys)
	}
}

// TestStateShared: two stores on one bucket, as two instances would
// have, take over one record with If-Match.
func TestStateShared(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	a := newWriteStore(t, srv, nil, nil)
	b := newStore(t, srv, a.bucket, "w")
	storetest.RunStateShared(t, a.State(), b.State())
}
