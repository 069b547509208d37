//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tus/tusd/v2/pkg/filestore"
	tusd "github.com/tus/tusd/v2/pkg/handler"
	"golang.org/x/exp/slog"
)

// tusdServer runs tusd, the reference tus server, with its file store in
// dir, at /files/, wanting a bearer token.
func tusdServer(t *testing.T, dir, token string) *httptest.Server {
	t.Helper()
	composer := tusd.NewStoreComposer()
	filestore.New(dir).UseIn(composer)
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

// TestPutKilled uploads 1 GiB with tus, kills the client (SIGKILL)
// mid-way, runs it again: the same upload resumes and the stored bytes
// match.
func TestPutKilled(t *testing.T) {
	src := filepath.Join(t.TempDir(), "up.bin")
	const size = 1 << 30
	want := writeRandom(t, src, size, 45)
	store := t.TempDir()
	srv := tusdServer(t, store, "tok")
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "LARGO_TOKEN=tok"}

	c := startClientEnv(t, env, "put", src, srv.URL+"/files/", "-q")
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
	c = startClientEnv(t, env, "put", src, srv.URL+"/files/")
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
