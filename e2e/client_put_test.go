//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tus/tusd/v2/pkg/filestore"
	tusd "github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"
	"golang.org/x/exp/slog"
)

// tusdServer runs tusd, the reference tus server, with its file store in
// dir and its locks in memory (as tusd itself is run: without a locker,
// the request of a killed client, still in the server's socket, was
// written beside the next run's, and the file stored was wrong), at
// /files/, wanting a bearer token.
func tusdServer(t *testing.T, dir, token string) *httptest.Server {
	t.Helper()
	composer := tusd.NewStoreComposer()
	filestore.New(dir).UseIn(composer)
	memorylocker.New().UseIn(composer)
	h, err := tusd.NewHandler(tusd.Config{BasePath: "/files/", StoreComposer: composer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	files := http.StripPrefix("/files/", h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodOptions && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "a valid token is needed", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPutKilled uploads 1 GiB with tus in one stream (-j 1), kills the
// client (SIGKILL) mid-way, runs it again: the same upload resumes and the
// stored bytes match.
func TestPutKilled(t *testing.T) {
	src := filepath.Join(t.TempDir(), "up.bin")
	const size = 1 << 30
	want := writeRandom(t, src, size, 45)
	store := t.TempDir()
	srv := tusdServer(t, store, "tok")
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "LARGO_TOKEN=tok"}

	c := startClientEnv(t, env, "put", src, srv.URL+"/files/", "-q", "-j", "1")
	if code := c.stopAfter(t, size+400<<20, syscall.SIGKILL); code != -1 {
		t.Fatalf("killed client exit %d", code)
	}
	infos, _ := filepath.Glob(filepath.Join(store, "*.info"))
	if len(infos) != 1 {
		t.Fatalf("%d uploads on the server after the kill; want 1", len(infos))
	}
	bin := strings.TrimSuffix(infos[0], ".info")
	fi, _ := os.Stat(bin)
	if fi.Size() == 0 || fi.Size() == size {
		t.Fatalf("the server holds %d bytes after the kill; want some of %d", fi.Size(), size)
	}
	c = startClientEnv(t, env, "put", src, srv.URL+"/files/", "-j", "1")
	if code := c.wait(t, 120*time.Second); code != 0 || !strings.Contains(c.stderr.String(), "resumed") {
		t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
	}
	if infos, _ := filepath.Glob(filepath.Join(store, "*.info")); len(infos) != 1 {
		t.Fatalf("%d uploads on the server; want the one resumed", len(infos))
	}
	if got := fileSHA(t, bin); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}

	// A wrong token: exit 1, one clear line.
	c = startClientEnv(t, []string{"XDG_CACHE_HOME=" + cache, "LARGO_TOKEN=nope"}, "put", src, srv.URL+"/files/")
	if code := c.wait(t, 60*time.Second); code != 1 || !strings.Contains(c.stderr.String(), "401") || !strings.Contains(c.stderr.String(), "--token") {
		t.Fatalf("wrong token: exit %d: %s", code, c.stderr.String())
	}
}

// tusInfo is what tusd keeps of an upload beside its bytes (ID.info).
type tusInfo struct {
	ID             string
	Size           int64
	IsPartial      bool
	IsFinal        bool
	PartialUploads []string
}

// tusInfos reads every upload tusd's file store in dir holds, by ID.
func tusInfos(t *testing.T, dir string) map[string]tusInfo {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.info"))
	infos := map[string]tusInfo{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var in tusInfo
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		infos[in.ID] = in
	}
	return infos
}

// TestPutParallelKilled uploads 256 MiB to tusd, the reference tus
// server, in pieces four at once (largo put's default for a file this
// large), kills the client (SIGKILL) mid-way and runs it again: it says
// it resumed, every piece that held bytes at the kill is one of the final
// upload's (none sent again from its start), and the file tusd joined is
// the one sent.
func TestPutParallelKilled(t *testing.T) {
	src := filepath.Join(t.TempDir(), "up.bin")
	const size = 256 << 20
	want := writeRandom(t, src, size, 46)
	store := t.TempDir()
	srv := tusdServer(t, store, "tok")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=tok"}

	c := startClientEnv(t, env, "put", src, srv.URL+"/files/", "-q")
	if code := c.stopAfter(t, size+size/2, syscall.SIGKILL); code != -1 {
		t.Fatalf("killed client exit %d", code)
	}
	var started []string
	for id, in := range tusInfos(t, store) {
		if in.IsFinal {
			t.Fatalf("a final upload %s before the pieces were all sent", id)
		}
		// tusd's file store keeps the offset as the size of the bytes.
		if fi, err := os.Stat(filepath.Join(store, id)); err == nil && in.IsPartial && fi.Size() > 0 {
			started = append(started, id)
		}
	}
	if len(started) < 2 {
		t.Fatalf("%d pieces hold bytes after the kill; want several at once", len(started))
	}
	c = startClientEnv(t, env, "put", src, srv.URL+"/files/")
	if code := c.wait(t, 120*time.Second); code != 0 || !strings.Contains(c.stderr.String(), "resumed") {
		t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
	}
	var final tusInfo
	for _, in := range tusInfos(t, store) {
		if in.IsFinal {
			final = in
		}
	}
	if final.ID == "" || final.Size != size {
		t.Fatalf("no final upload of %d bytes: %+v", int64(size), final)
	}
	for _, id := range started {
		if !slices.ContainsFunc(final.PartialUploads, func(u string) bool { return strings.HasSuffix(u, id) }) {
			t.Errorf("piece %s, started before the kill, is not in the final upload %v", id, final.PartialUploads)
		}
	}
	if got := fileSHA(t, filepath.Join(store, final.ID)); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
}
