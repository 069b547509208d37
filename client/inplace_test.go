package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"largo/client"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/record"
	"largo/resumable"
	"largo/serve"
)

// recordingServer is largo's handler with tus uploads on a folder, with
// or without the records that keep each file's digest (Repr-Digest on
// HEAD); in front of it, a count of the bytes uploads carry.
func recordingServer(t testing.TB, digests bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	cfg, _ := writable(t, t.TempDir(), digests)
	h := serve.New(cfg)
	var body atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body.Add(max(r.ContentLength, 0))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &body
}

// writable is the configuration of largo's handler on the folder dir
// with writes on for everyone (the write pipeline, tus uploads), with
// the records of files when records is set, and its tus handler.
func writable(t testing.TB, dir string, records bool) (serve.Config, *resumable.Handler) {
	t.Helper()
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g, gated := gate.Open(st)
	icfg := ingest.Config{Store: gated}
	cfg := serve.Config{Store: gated, Gate: g}
	if records {
		files := record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
		icfg.Files, cfg.Files = files, files
	}
	cfg.Writes = ingest.New(icfg)
	staging, err := resumable.StagingFor(st)
	if err != nil {
		t.Fatal(err)
	}
	rh, err := resumable.New(resumable.Config{Writes: cfg.Writes, Staging: staging, State: st.State(), BasePath: serve.ResumablePrefix})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resumable = rh
	return cfg, rh
}

// TestPutTreeSkipsInPlace: a folder sent again sends nothing the server
// holds whole; a file changed without a change of size is sent again when
// the server keeps its digest; without digests, the size and the date are
// believed, unless Checksum asks for a digest.
func TestPutTreeSkipsInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i, name := range []string{"a.bin", "sub/b.bin", "sub/c d.bin"} {
		writeRandom(t, filepath.Join(dir, name), int64(1000+i*100), byte(60+i))
	}
	put := func(c *client.Client, url string) client.TreeResult {
		t.Helper()
		d, err := c.Discover(ctx, url, false)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := c.PutTree(ctx, dir, d)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	var l logs
	c := tusClient(t, &l, 0)
	srv, body := recordingServer(t, true)
	if tr := put(c, srv.URL+"/up/"); tr.Files != 3 || tr.UpToDate != 0 {
		t.Fatalf("first: %+v", tr)
	}
	sent := body.Load()
	if tr := put(c, srv.URL+"/up/"); tr.Files != 0 || tr.UpToDate != 3 || body.Load() != sent {
		t.Fatalf("again: %+v, %d bytes sent", tr, body.Load()-sent)
	}
	// The same size, an older date: only its digest tells it changed.
	changed := filepath.Join(dir, "sub", "b.bin")
	writeRandom(t, changed, 1100, 99)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(changed, old, old)
	if tr := put(c, srv.URL+"/up/"); tr.Files != 1 || tr.UpToDate != 2 {
		t.Fatalf("changed: %+v", tr)
	}

	plain, _ := recordingServer(t, false)
	if tr := put(c, plain.URL+"/up/"); tr.Files != 3 {
		t.Fatalf("no digests, first: %+v", tr)
	}
	if tr := put(c, plain.URL+"/up/"); tr.UpToDate != 3 {
		t.Fatalf("no digests, again: %+v", tr)
	}
	c.Checksum = true
	if tr := put(c, plain.URL+"/up/"); tr.Files != 3 || tr.UpToDate != 0 {
		t.Fatalf("no digests, --checksum: %+v", tr)
	}
}

// TestPutParallelStopped: a parallel upload stopped through its context
// before its pieces are made stops resumable, whatever step it was at.
func TestPutParallelStopped(t *testing.T) {
	srv, _ := recordingServer(t, false)
	file := filepath.Join(t.TempDir(), "p.bin")
	writeRandom(t, file, 4<<20, 90)
	var l logs
	c := tusClient(t, &l, 0)
	c.Parallel, c.ParallelMin, c.PieceSize = 4, 1<<20, 1<<20
	d, err := c.Discover(context.Background(), srv.URL+"/up/", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stop"))
	if _, err := c.Put(ctx, file, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatalf("stopped: %v; want it resumable", err)
	}
}
