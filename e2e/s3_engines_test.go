//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/s3/s3test"
)

// TestS3Engines runs largo on each row of the compatibility matrix: a
// proxy in front of versitygw that behaves as another S3 server does
// where it departs from versitygw (s3test.Engines). On each, largo either
// shares the bucket among instances, or keeps it to one (saying why at
// start-up, and refusing a second instance, and --s3-instances many,
// with one line naming the server's gap and the documented way out);
// either way the replicas' writes work through it: conditional PUT and
// DELETE, a listing of names that listings encode, a tus upload whose
// PATCHes do not fall on part boundaries, and a parallel `largo put -j
// 4`, each read back whole through the other instance where there is one.
func TestS3Engines(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	// The quirks rewrite versitygw's answers: another engine behind the
	// proxy answers otherwise already (its keys encoded its own way).
	srv.NeedLocal(t)
	src := filepath.Join(t.TempDir(), "parallel.bin")
	wantPar := writeRandom(t, src, 67<<20, 71)
	tusData := make([]byte, 44<<20)
	for i := range tusData {
		tusData[i] = byte(i*7 + i>>20)
	}
	for _, e := range s3test.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			p := srv.QuirkProxy(t, e.Quirks)
			store := "s3://" + srv.Bucket + "/" + strings.ToLower(e.Name)
			args := []string{"serve", "--store", store, "--listen", "127.0.0.1:0", "--upload", "--token", testToken, adminListen, "127.0.0.1:0"}
			a := startLargo(t, args, p.Env())
			gap := e.Quirks.Gap()
			b := a
			if gap == "" {
				if strings.Contains(a.stderr.String(), "one instance only") {
					t.Fatalf("a server without gaps kept to one instance:\n%s", a.stderr.String())
				}
				b = startLargo(t, args, p.Env())
			} else {
				log := a.stderr.String()
				if !strings.Contains(log, "one instance only") || !strings.Contains(log, gap) || !strings.Contains(log, "docs/buckets.md#engines") {
					t.Fatalf("start-up log without the one-instance line naming %q:\n%s", gap, log)
				}
				code, _, errs := runLargo(t, p.Env(), args...)
				if last := lastLine(errs); code != 2 || !strings.HasPrefix(last, "largo: ") || !strings.Contains(last, "another largo instance") || !strings.Contains(last, "docs/buckets.md") {
					t.Errorf("a second instance: exit %d, %q; want 2 and a last line naming the other instance and the docs", code, errs)
				}
				code, _, errs = runLargo(t, p.Env(), append(args, "--s3-instances", "many")...)
				if last := lastLine(errs); code != 2 || !strings.HasPrefix(last, "largo: ") || !strings.Contains(last, gap) || !strings.Contains(last, "--s3-instances one") || !strings.Contains(last, "docs/buckets.md") {
					t.Errorf("--s3-instances many: exit %d, %q; want 2 and a last line naming %q and the way out", code, errs, gap)
				}
			}
			if e.Quirks.NoTrailers {
				if !strings.Contains(a.stderr.String(), "without a checksum trailer") {
					t.Errorf("no line on the checksum trailers refused:\n%s", a.stderr.String())
				}
				code, _, errs := runLargo(t, p.Env(), append(args, "--s3-checksum", "trailer")...)
				if last := lastLine(errs); code != 2 || !strings.HasPrefix(last, "largo: ") || !strings.Contains(last, "refuses checksum trailers") || !strings.Contains(last, "--s3-checksum") {
					t.Errorf("--s3-checksum trailer: exit %d, %q; want 2 and a last line naming the gap and the way out", code, errs)
				}
			}
			testEngineWrites(t, a, b, src, wantPar, tusData)
		})
	}
}

// lastLine is the last line of out: the error a command ends with, after
// what it logged.
func lastLine(out string) string {
	out = strings.TrimSpace(out)
	return out[strings.LastIndexByte(out, '\n')+1:]
}

// testEngineWrites writes through a and reads through b (a itself when the
// bucket is kept to one instance).
func testEngineWrites(t *testing.T, a, b *server, src, wantPar string, tusData []byte) {
	// A conditional PUT, of a name a listing encodes.
	// A type never compressed: the ETag is the stored bytes'.
	name := "notes/a+b c%.bin"
	u := a.URL + "notes/" + url.PathEscape("a+b c%.bin")
	body := strings.Repeat("engine ", 1000)
	r, _ := put(t, u, strings.NewReader(body), int64(len(body)), append([]string{"If-None-Match", "*"}, bearer...)...)
	if r.StatusCode != 201 {
		t.Fatalf("PUT %s with If-None-Match: %d", name, r.StatusCode)
	}
	if r, _ := put(t, u, strings.NewReader(body), int64(len(body)), append([]string{"If-None-Match", "*"}, bearer...)...); r.StatusCode != 412 {
		t.Errorf("PUT again with If-None-Match: %d; want 412", r.StatusCode)
	}
	etag := r.Header.Get("ETag")
	onB := strings.Replace(u, a.URL, b.URL, 1)
	got := get(t, onB)
	if b, _ := io.ReadAll(got.Body); got.StatusCode != 200 || string(b) != body || got.Header.Get("ETag") != etag || !strings.HasPrefix(etag, `"`) {
		t.Errorf("GET %s: %d, ETag %q (the PUT's %q), %d bytes", name, got.StatusCode, got.Header.Get("ETag"), etag, len(b))
	}
	if code := get(t, onB, "If-None-Match", etag).StatusCode; code != 304 {
		t.Errorf("GET with the PUT's ETag in If-None-Match: %d; want 304", code)
	}
	req, _ := http.NewRequest("GET", b.URL+"notes/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Entries []struct{ Name string } `json:"entries"`
	}
	err = json.NewDecoder(resp.Body).Decode(&l)
	resp.Body.Close()
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Name != "a+b c%.bin" {
		t.Errorf("listing of notes/: %+v, %v", l.Entries, err)
	}

	// A tus upload whose PATCHes do not fall on part boundaries: begun
	// through a, ended through b.
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte("tus.bin"))
	r, _ = send(t, "POST", a.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", fmt.Sprint(len(tusData)), "Upload-Metadata", meta}, bearer...)...)
	loc := r.Header.Get("Location")
	if r.StatusCode != 201 || loc == "" {
		t.Fatalf("tus creation: %d", r.StatusCode)
	}
	if !strings.HasPrefix(loc, "http") {
		loc = strings.TrimSuffix(a.URL, "/") + loc
	}
	off := 0
	for i, n := range []int{20 << 20, 20 << 20, len(tusData) - 40<<20} {
		target := loc
		if i > 0 {
			target = onInstance(b, loc)
		}
		r, _ = send(t, "PATCH", target, strings.NewReader(string(tusData[off:off+n])), int64(n),
			append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", fmt.Sprint(off), "Content-Type", "application/offset+octet-stream"}, bearer...)...)
		if r.StatusCode != 204 {
			t.Fatalf("PATCH at %d: %d", off, r.StatusCode)
		}
		off += n
	}
	got = get(t, b.URL+"tus.bin")
	if b, _ := io.ReadAll(got.Body); got.StatusCode != 200 || string(b) != string(tusData) {
		t.Errorf("tus.bin: %d, %d bytes; want the %d sent", got.StatusCode, len(b), len(tusData))
	}

	// A parallel upload.
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=" + testToken}
	c := startClientEnv(t, env, "put", src, a.URL+"par/", "-q", "-j", "4")
	if code := c.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("largo put -j 4: exit %d: %s", code, c.stderr.String())
	}
	got = get(t, b.URL+"par/"+filepath.Base(src))
	if sum, n := bodySHA(t, got.Body); got.StatusCode != 200 || sum != wantPar {
		t.Errorf("the parallel upload: %d, %d bytes, sha %s; want %s", got.StatusCode, n, sum, wantPar)
	}

	// Removals under If-Match.
	if r, _ := send(t, "DELETE", onB, nil, 0, append([]string{"If-Match", `"stale"`}, bearer...)...); r.StatusCode != 412 {
		t.Errorf("DELETE with a stale If-Match: %d; want 412", r.StatusCode)
	}
	if r, _ := send(t, "DELETE", onB, nil, 0, append([]string{"If-Match", etag}, bearer...)...); r.StatusCode != 204 {
		t.Errorf("DELETE with the ETag: %d; want 204", r.StatusCode)
	}
	if code := get(t, u).StatusCode; code != 404 {
		t.Errorf("after the DELETE: %d", code)
	}
}
