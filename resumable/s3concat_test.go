package resumable

import (
	"context"
	"crypto/sha256"
	"io"
	"testing"
	"time"

	"largo"
	"largo/gate"
	"largo/internal/poll"
	"largo/s3/s3test"
	"largo/wire"
)

// sendPiecesOn creates and sends the partials ps of data through the two
// instances in turn, placed under id when set.
func (f *s3Fixture) sendPieces(t *testing.T, name string, data []byte, ps []piece, id string) []string {
	t.Helper()
	urls := make([]string, len(ps))
	for i, p := range ps {
		x := []*fixture{f.a, f.b}[i%2]
		url, resp := x.partial(t, name, p.size, id, p.at, len(data))
		if resp.StatusCode != 201 {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("partial %d: %d %s", i, resp.StatusCode, body)
		}
		urls[i] = url
	}
	for i := len(ps) - 1; i >= 0; i-- {
		x := []*fixture{f.a, f.b}[(i+1)%2]
		p := ps[i]
		if r := x.patch(t, on(x, urls[i]), 0, string(data[p.at:p.at+p.size])); r.StatusCode != 204 {
			t.Fatalf("PATCH of partial %d: %d", i, r.StatusCode)
		}
	}
	return urls
}

// checkJoined checks a final's answer and the object it stored, and that
// nothing of its partials is left but the records that answer for it.
func (f *s3Fixture) checkJoined(t *testing.T, r interface{ Get(string) string }, code int, name string, data []byte) {
	t.Helper()
	sum := sha256.Sum256(data)
	if code != 201 || r.Get("Repr-Digest") != wire.FormatDigest(sum[:]) {
		t.Fatalf("final: %d, Repr-Digest %q", code, r.Get("Repr-Digest"))
	}
	if got := f.object(t, "site/"+name); got != string(data) {
		t.Fatalf("stored %d bytes; want %d", len(got), len(data))
	}
	f.a.h.hashers.Wait()
	f.b.h.hashers.Wait()
	if keys, uploads := f.keys(t, "site/"+largo.StateDir+"/tus/"); len(keys) != 0 || uploads != 0 {
		t.Errorf("state left: %v, %d multipart uploads", keys, uploads)
	}
	if keys, _ := f.keys(t, "site/"+largo.StateDir+"/tus-group/"); len(keys) != 0 {
		t.Errorf("records of partials left: %v", keys)
	}
}

// TestS3ConcatPlaced: placed partials through two instances of one bucket
// are hashed as their prefix fills in and copied, as each ends, into one
// multipart upload at the file's own key, which the final completes.
func TestS3ConcatPlaced(t *testing.T) {
	f := newS3Fixture(t, Config{})
	data := randomData(17<<20 + 321)
	urls := f.sendPieces(t, "p/joined.bin", data, pieces(data, 6<<20), "bucket-file")
	g := groupKey(gate.User("").String(), "bucket-file")
	poll.Wait(t, 20*time.Second, "the group's hash to cover the file", func() bool {
		return f.a.h.loadGroupHash(context.Background(), g).n == int64(len(data))
	})
	if up := f.srv.Uploads(t, f.srv.Bucket, "site/p/joined.bin"); len(up) != 1 {
		t.Fatalf("multipart uploads at the file's key before the final: %v; want its assembly", up)
	}
	sum := sha256.Sum256(data)
	r := f.a.final(t, "p/joined.bin", urls, "Repr-Digest", wire.FormatDigest(sum[:]))
	f.checkJoined(t, r.Header, r.StatusCode, "p/joined.bin", data)
	if _, up := f.keys(t, "site/p/"); up != 0 {
		t.Errorf("%d multipart uploads left at the file's key", up)
	}
	if keys, _ := f.keys(t, "site/"+largo.StateDir+"/multipart/"); len(keys) != 0 {
		t.Errorf("records of multipart uploads left: %v", keys)
	}
	if f.a.obs.pending+f.b.obs.pending != 0 {
		t.Errorf("pending bytes across instances: %d", f.a.obs.pending+f.b.obs.pending)
	}
	again := f.b.final(t, "p/joined.bin", urls)
	if again.StatusCode != 201 || again.Header.Get("ETag") != r.Header.Get("ETag") {
		t.Errorf("final again, through the other instance: %d %v", again.StatusCode, again.Header)
	}
}

// TestS3ConcatAssemblyLost: a group whose assembly is gone (aborted by a
// sweep) is joined by part copies at the final.
func TestS3ConcatAssemblyLost(t *testing.T) {
	f := newS3Fixture(t, Config{})
	data := randomData(12<<20 + 5)
	urls := f.sendPieces(t, "lost.bin", data, pieces(data, 5<<20), "lost-file")
	g := groupKey(gate.User("").String(), "lost-file")
	poll.Wait(t, 20*time.Second, "the group's hash to cover the file", func() bool {
		return f.a.h.loadGroupHash(context.Background(), g).n == int64(len(data))
	})
	f.srv.Put(t, "site/"+largo.StateDir+"/tus/"+g+".asm", []byte(`{"name":"lost.bin","key":"site/lost.bin","id":"no-such-upload"}`))
	r := f.b.final(t, "lost.bin", urls)
	f.checkJoined(t, r.Header, r.StatusCode, "lost.bin", data)
}

// TestS3ConcatPlain: partials that announce no place are joined by part
// copies in the order listed.
func TestS3ConcatPlain(t *testing.T) {
	f := newS3Fixture(t, Config{})
	data := randomData(11<<20 + 3)
	urls := f.sendPieces(t, "plain.bin", data, pieces(data, 5<<20), "")
	r := f.b.final(t, "plain.bin", urls)
	f.checkJoined(t, r.Header, r.StatusCode, "plain.bin", data)
}

// TestS3ConcatSmall: partials below S3's smallest part are joined through
// largo in a small file.
func TestS3ConcatSmall(t *testing.T) {
	f := newS3Fixture(t, Config{})
	data := randomData(3<<20 + 17)
	urls := f.sendPieces(t, "small.bin", data, pieces(data, 1<<20), "")
	r := f.a.final(t, "small.bin", urls)
	f.checkJoined(t, r.Header, r.StatusCode, "small.bin", data)
}

// TestS3ConcatEngines joins files on servers that take parts of one size
// only (all but the last), or no UploadPartCopy: placed partials of
// uneven sizes, whose parts the final cuts at the first that can set the
// cut (passing the bytes of the parts two partials share through
// largo); plain partials of uneven sizes; a tus upload sent in chunks of
// uneven sizes, each of whose parts but the last is of the part size.
func TestS3ConcatEngines(t *testing.T) {
	for _, e := range s3test.Engines() {
		if !e.Quirks.EqualParts && !e.Quirks.NoPartCopy {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			f := newS3FixtureOn(t, Config{}, e.Quirks, 6<<20)
			data := randomData(21<<20 + 321)
			uneven := []piece{{at: 0, size: 7 << 20}, {at: 7 << 20, size: 5 << 20}, {at: 12 << 20, size: 9<<20 + 321}}
			urls := f.sendPieces(t, "uneven.bin", data, uneven, "uneven-file")
			g := groupKey(gate.User("").String(), "uneven-file")
			poll.Wait(t, 20*time.Second, "the group's hash to cover the file", func() bool {
				return f.a.h.loadGroupHash(context.Background(), g).n == int64(len(data))
			})
			r := f.a.final(t, "uneven.bin", urls)
			f.checkJoined(t, r.Header, r.StatusCode, "uneven.bin", data)

			urls = f.sendPieces(t, "plain.bin", data, uneven, "")
			r = f.b.final(t, "plain.bin", urls)
			f.checkJoined(t, r.Header, r.StatusCode, "plain.bin", data)

			x := f.a
			url, resp := x.create(t, int64(len(data)), map[string]string{"filename": "chunks.bin"})
			if resp.StatusCode != 201 {
				t.Fatalf("create: %d", resp.StatusCode)
			}
			off := 0
			for _, n := range []int{11 << 20, 3 << 20, 4 << 20, len(data) - 18<<20} {
				if r := x.patch(t, url, int64(off), string(data[off:off+n])); r.StatusCode != 204 {
					t.Fatalf("PATCH at %d: %d", off, r.StatusCode)
				}
				off += n
			}
			poll.Wait(t, 20*time.Second, "the upload to be placed", func() bool { return f.object(t, "site/chunks.bin") != "" })
			if f.object(t, "site/chunks.bin") != string(data) {
				t.Fatal("chunks.bin is not the bytes sent")
			}
		})
	}
}
