package resumable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/gate"
	"largo/ingest"
	"largo/internal/poll"
	"largo/wire"
)

// piece is a partial upload of data[at:at+size] made by a test.
type piece struct {
	at, size int
	url      string
}

// partial creates a partial upload of size bytes for name; with id set,
// placed at at in a file of total bytes.
func (f *fixture) partial(t testing.TB, name string, size int, id string, at, total int, hdr ...string) (string, *http.Response) {
	t.Helper()
	meta := map[string]string{"filename": name}
	if id != "" {
		meta[KeyConcatID] = id
		meta[KeyConcatOffset] = fmt.Sprint(at)
		meta[KeyConcatLength] = fmt.Sprint(total)
	}
	return f.create(t, int64(size), meta, append([]string{"Upload-Concat", "partial"}, hdr...)...)
}

// final creates the final upload of urls, in order, for name.
func (f *fixture) final(t testing.TB, name string, urls []string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/_largo/uploads/", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Concat", "final;"+strings.Join(urls, " "))
	req.Header.Set("Upload-Metadata", "filename "+b64(name))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pieces cuts data into partials of at most each bytes.
func pieces(data []byte, each int) []piece {
	var ps []piece
	for at := 0; at < len(data); at += each {
		ps = append(ps, piece{at: at, size: min(each, len(data)-at)})
	}
	return ps
}

// randomData returns n bytes that differ from test to test.
func randomData(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	r.Read(b)
	return b
}

// sendPieces creates and sends ps of data (placed under id when set),
// completing them in the order given by order.
func (f *fixture) sendPieces(t *testing.T, name string, data []byte, ps []piece, id string, order []int) []string {
	t.Helper()
	for i := range ps {
		url, resp := f.partial(t, name, ps[i].size, id, ps[i].at, len(data))
		if resp.StatusCode != 201 {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("partial %d: %d %s", i, resp.StatusCode, body)
		}
		ps[i].url = url
	}
	for _, i := range order {
		p := ps[i]
		if r := f.patch(t, p.url, 0, string(data[p.at:p.at+p.size])); r.StatusCode != 204 {
			t.Fatalf("PATCH of partial %d: %d", i, r.StatusCode)
		}
	}
	urls := make([]string, len(ps))
	for i, p := range ps {
		urls[i] = p.url
	}
	return urls
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestConcatPlaced: placed partials, sent in any order, make one staged
// file that the final renames into place, with the whole file's digest
// (checked against the final's Repr-Digest), and nothing left behind.
func TestConcatPlaced(t *testing.T) {
	f := newFixture(t, Config{})
	data := randomData(3<<20 + 12345)
	sum := sha256.Sum256(data)
	ps := pieces(data, 1<<20)
	urls := f.sendPieces(t, "big.bin", data, ps, "file-one-1", []int{2, 0, 3, 1})
	g := groupKey(gate.User("").String(), "file-one-1")
	// The hasher follows the prefix as it fills in.
	poll.Wait(t, 10*time.Second, "the group's hash to cover the file", func() bool { return f.h.loadGroupHash(context.Background(), g).n == int64(len(data)) })
	if _, err := os.Stat(filepath.Join(f.dir, ".largo", "tus", g)); err != nil {
		t.Fatalf("no group file: %v", err)
	}
	r := f.final(t, "big.bin", urls, "Repr-Digest", wire.FormatDigest(sum[:]))
	if r.StatusCode != 201 || r.Header.Get("Repr-Digest") != wire.FormatDigest(sum[:]) || r.Header.Get("Content-Location") != "/big.bin" {
		body, _ := io.ReadAll(r.Body)
		t.Fatalf("final: %d %v %s", r.StatusCode, r.Header, body)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "big.bin")); !bytes.Equal(b, data) {
		t.Fatalf("stored %d bytes, not the file", len(b))
	}
	f.h.hashers.Wait()
	if n := f.stateFiles(t); n != 0 {
		ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus"))
		t.Errorf("%d state files left: %v", n, ents)
	}
	if f.obs.pending != 0 || strings.Join(f.obs.outcomes, ",") != "complete" {
		t.Errorf("pending %d, outcomes %v", f.obs.pending, f.obs.outcomes)
	}
	// Sent again (its answer lost), the final is answered the same.
	again := f.final(t, "big.bin", urls)
	if again.StatusCode != 201 || !strings.HasSuffix(r.Header.Get("Location"), again.Header.Get("Location")) || again.Header.Get("ETag") != r.Header.Get("ETag") {
		t.Errorf("final again: %d %v", again.StatusCode, again.Header)
	}
}

// TestConcatPlain: partials that announce no place are joined in the
// order the final lists them, by the kernel, with the digest carried on
// from the first partial's hash state.
func TestConcatPlain(t *testing.T) {
	f := newFixture(t, Config{})
	data := randomData(2<<20 + 777)
	sum := sha256.Sum256(data)
	urls := f.sendPieces(t, "plain.bin", data, pieces(data, 600<<10), "", []int{3, 1, 0, 2})
	r := f.final(t, "plain.bin", urls)
	if r.StatusCode != 201 || r.Header.Get("Repr-Digest") != wire.FormatDigest(sum[:]) {
		body, _ := io.ReadAll(r.Body)
		t.Fatalf("final: %d %v %s", r.StatusCode, r.Header, body)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "plain.bin")); !bytes.Equal(b, data) {
		t.Fatalf("stored %d bytes, not the file", len(b))
	}
	if n := f.stateFiles(t); n != 0 || f.obs.pending != 0 {
		t.Errorf("%d state files, %d pending", n, f.obs.pending)
	}
}

// TestConcatPlacedOutOfOrder: placed partials a final lists in another
// order than their places are joined as listed, not renamed.
func TestConcatPlacedOutOfOrder(t *testing.T) {
	f := newFixture(t, Config{})
	data := randomData(3 << 20)
	ps := pieces(data, 1<<20)
	urls := f.sendPieces(t, "mixed.bin", data, ps, "mixed-order", seq(len(ps)))
	urls[0], urls[1] = urls[1], urls[0]
	want := append(append(append([]byte{}, data[1<<20:2<<20]...), data[:1<<20]...), data[2<<20:]...)
	sum := sha256.Sum256(want)
	r := f.final(t, "mixed.bin", urls)
	if r.StatusCode != 201 || r.Header.Get("Repr-Digest") != wire.FormatDigest(sum[:]) {
		t.Fatalf("final: %d %v", r.StatusCode, r.Header)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "mixed.bin")); !bytes.Equal(b, want) {
		t.Fatal("stored bytes not in the final's order")
	}
	f.h.hashers.Wait()
	if n := f.stateFiles(t); n != 0 {
		t.Errorf("%d state files left", n)
	}
}

// TestConcatDigestMismatch: a final whose Repr-Digest differs is refused
// with the computed digest, stores nothing, and takes its partials along.
func TestConcatDigestMismatch(t *testing.T) {
	for _, id := range []string{"", "mismatched"} {
		f := newFixture(t, Config{})
		data := randomData(1<<20 + 5)
		sum := sha256.Sum256(data)
		urls := f.sendPieces(t, "m.bin", data, pieces(data, 300<<10), id, seq(4))
		r := f.final(t, "m.bin", urls, "Repr-Digest", wire.FormatDigest(make([]byte, 32)))
		if r.StatusCode != 400 || r.Header.Get("Repr-Digest") != wire.FormatDigest(sum[:]) {
			t.Fatalf("id %q: mismatch: %d %v", id, r.StatusCode, r.Header)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "m.bin")); !os.IsNotExist(err) {
			t.Fatal("mismatched file stored")
		}
		f.h.hashers.Wait()
		if n := f.stateFiles(t); n != 0 || f.obs.pending != 0 {
			t.Errorf("id %q: %d state files, %d pending", id, n, f.obs.pending)
		}
	}
}

// TestConcatRefused: partials and finals are admitted like uploads.
func TestConcatRefused(t *testing.T) {
	f := newFixture(t, Config{}, ingest.Config{MaxSize: 1 << 20})
	for _, tt := range []struct {
		name   string
		size   int
		meta   map[string]string
		concat string
		code   int
	}{
		{"partial without a name", 10, map[string]string{}, "partial", 400},
		{"partial at a hidden name", 10, map[string]string{"filename": ".env"}, "partial", 403},
		{"placement past the end", 10, map[string]string{"filename": "x", KeyConcatID: "abcdefgh", KeyConcatOffset: "95", KeyConcatLength: "100"}, "partial", 400},
		{"placement without an id", 10, map[string]string{"filename": "x", KeyConcatOffset: "0", KeyConcatLength: "100"}, "partial", 400},
		{"bad concat-id", 10, map[string]string{"filename": "x", KeyConcatID: "a/b/c/d/e", KeyConcatOffset: "0", KeyConcatLength: "100"}, "partial", 400},
		{"negative offset", 10, map[string]string{"filename": "x", KeyConcatID: "abcdefgh", KeyConcatOffset: "-1", KeyConcatLength: "100"}, "partial", 400},
		{"whole file too large", 10, map[string]string{"filename": "x", KeyConcatID: "abcdefgh", KeyConcatOffset: "0", KeyConcatLength: fmt.Sprint(2 << 20)}, "partial", 413},
		{"placement on a whole upload", 10, map[string]string{"filename": "x", KeyConcatID: "abcdefgh", KeyConcatOffset: "0", KeyConcatLength: "10"}, "", 400},
	} {
		var hdr []string
		if tt.concat != "" {
			hdr = []string{"Upload-Concat", tt.concat}
		}
		if _, resp := f.create(t, int64(tt.size), tt.meta, hdr...); resp.StatusCode != tt.code {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s; want %d", tt.name, resp.StatusCode, body, tt.code)
		}
	}
	// Another length under one concat-id: a conflict.
	if _, resp := f.partial(t, "g.bin", 10, "same-id-1", 0, 100); resp.StatusCode != 201 {
		t.Fatalf("first partial: %d", resp.StatusCode)
	}
	if _, resp := f.partial(t, "g.bin", 10, "same-id-1", 10, 200); resp.StatusCode != 409 {
		t.Errorf("another length: %d; want 409", resp.StatusCode)
	}
	// A final over the size limit: 413.
	var urls []string
	for range 3 {
		u, _ := f.partial(t, "big", 400<<10, "", 0, 0)
		f.patch(t, u, 0, strings.Repeat("x", 400<<10))
		urls = append(urls, u)
	}
	if r := f.final(t, "big", urls); r.StatusCode != 413 {
		t.Errorf("final over the limit: %d", r.StatusCode)
	}
	// A final of a partial not finished: 400.
	u, _ := f.partial(t, "half", 10, "", 0, 0)
	f.patch(t, u, 0, "12345")
	if r := f.final(t, "half", []string{u}); r.StatusCode != 400 {
		t.Errorf("final of an unfinished partial: %d", r.StatusCode)
	}
	// A partial is never stored alone, nor through PATCH's finish.
	if _, err := os.Stat(filepath.Join(f.dir, "big")); !os.IsNotExist(err) {
		t.Error("a partial was stored alone")
	}
}

// TestConcatOthers: a final that lists another user's partial is answered
// as for one that does not exist.
func TestConcatOthers(t *testing.T) {
	f := newFixture(t, Config{})
	u, _ := f.partial(t, "x", 3, "", 0, 0)
	f.patch(t, u, 0, "abc")
	req, _ := http.NewRequest("POST", f.srv.URL+"/_largo/uploads/", nil)
	req.SetBasicAuth("mallory", "")
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Concat", "final;"+u)
	req.Header.Set("Upload-Metadata", "filename "+b64("stolen"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("another's partial: %d; want 404", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "stolen")); !os.IsNotExist(err) {
		t.Error("stored another's bytes")
	}
}

// TestConcatRestart: placed partials resume on a new server over the
// same folder (a restart), and the final still has the whole digest.
func TestConcatRestart(t *testing.T) {
	f := newFixture(t, Config{})
	data := randomData(2<<20 + 99)
	sum := sha256.Sum256(data)
	ps := pieces(data, 1<<20)
	for i := range ps {
		ps[i].url, _ = f.partial(t, "r.bin", ps[i].size, "restarted", ps[i].at, len(data))
	}
	// Half of each, then the server is gone.
	for _, p := range ps {
		f.patch(t, p.url, 0, string(data[p.at:p.at+p.size/2]))
	}
	f.srv.Close()
	f.h.hashers.Wait()
	f.start(t, f.h.cfg)
	var urls []string
	for _, p := range ps {
		url := f.srv.URL + p.url[strings.Index(p.url, "/_largo/"):]
		req, _ := http.NewRequest("HEAD", url, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Upload-Offset"); got != fmt.Sprint(p.size/2) {
			t.Fatalf("offset after the restart: %q, want %d", got, p.size/2)
		}
		if r := f.patch(t, url, int64(p.size/2), string(data[p.at+p.size/2:p.at+p.size])); r.StatusCode != 204 {
			t.Fatalf("resumed PATCH: %d", r.StatusCode)
		}
		urls = append(urls, url)
	}
	r := f.final(t, "r.bin", urls)
	if r.StatusCode != 201 || r.Header.Get("Repr-Digest") != wire.FormatDigest(sum[:]) {
		t.Fatalf("final: %d %v", r.StatusCode, r.Header)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "r.bin")); !bytes.Equal(b, data) {
		t.Fatal("stored bytes differ")
	}
}

// TestConcatHashedRange: once the prefix is hashed, no partial may be
// placed within it again.
func TestConcatHashedRange(t *testing.T) {
	f := newFixture(t, Config{})
	data := randomData(2 << 20)
	ps := pieces(data, 1<<20)
	f.sendPieces(t, "h.bin", data, ps[:1], "hashed-range", []int{0})
	g := groupKey(gate.User("").String(), "hashed-range")
	poll.Wait(t, 10*time.Second, "the first partial to be hashed", func() bool { return f.h.loadGroupHash(context.Background(), g).n == 1<<20 })
	if _, resp := f.partial(t, "h.bin", 1<<20, "hashed-range", 0, len(data)); resp.StatusCode != 409 {
		t.Errorf("a partial over the hashed prefix: %d; want 409", resp.StatusCode)
	}
	if _, resp := f.partial(t, "h.bin", 1<<20, "hashed-range", 1<<20, len(data)); resp.StatusCode != 201 {
		t.Errorf("a partial after it: %d", resp.StatusCode)
	}
}

// TestConcatExpiry: a group and its partials left idle go with their
// space.
func TestConcatExpiry(t *testing.T) {
	f := newFixture(t, Config{Expiry: time.Hour})
	data := randomData(2 << 20)
	ps := pieces(data, 1<<20)
	f.sendPieces(t, "e.bin", data, ps, "expiring-1", []int{1})
	f.h.hashers.Wait()
	if f.stateFiles(t) == 0 {
		t.Fatal("no state")
	}
	f.now = f.now.Add(2 * time.Hour)
	if _, _, err := f.h.Expire(); err != nil {
		t.Fatal(err)
	}
	if n := f.stateFiles(t); n != 0 || f.obs.pending != 0 {
		ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus"))
		t.Errorf("%d state files left (%v), %d pending", n, ents, f.obs.pending)
	}
}
