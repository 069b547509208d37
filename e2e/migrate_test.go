//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/record"
)

// migrateAccess gives alice a quota and writes, so that the owner of a
// file counts.
const migrateAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1GB"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`

// TestRecordsMigrated: a state area made by the release before one
// record per file (a record per kind: the digest, a sidecar's source,
// the quota's owner, a drop box's expiry, each under its own prefix) is
// read after the upgrade: every digest is served, every sidecar is still
// largo's and sent, every owner still counts, and the old records go.
// On a folder and on a bucket.
func TestRecordsMigrated(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		access := writeAccessFile(t, migrateAccess)
		text := strings.Repeat("a line of a log, compressible\n", 200)
		g.seed(t, "logs/app.log", text)
		g.seed(t, "logs/app.log.gz", string(gzipped(t, []byte(text))))
		g.seed(t, "drop/in.bin", "dropped")
		// The versions as the server sees them.
		s := startServerOn(t, g, "--access", access)
		etag := map[string]string{}
		for _, n := range []string{"logs/app.log", "logs/app.log.gz", "drop/in.bin"} {
			resp, _ := send(t, "HEAD", s.URL+n, nil, 0)
			if etag[n] = resp.Header.Get("ETag"); etag[n] == "" {
				t.Fatalf("%s: no ETag", n)
			}
		}
		// The first start's own pass (nothing to move) ends with its
		// marker; wait for it, so that no write of it lands after the
		// marker is removed below.
		if !waitFor(10*time.Second, func() bool { return stateExists(t, g, "migrated/files-v1") }) {
			t.Fatal("the first start's migration pass did not finish")
		}
		s.signal(syscall.SIGTERM)
		s.wait(10 * time.Second)
		// The state area of the release before.
		putState := func(key string, v any) {
			t.Helper()
			b, _ := json.Marshal(v)
			if g.srv != nil {
				g.srv.Put(t, ".largo/"+key, b)
				return
			}
			p := filepath.Join(g.dir, ".largo", filepath.FromSlash(key))
			os.MkdirAll(filepath.Dir(p), 0o700)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		removeState(t, g, "migrated/files-v1")
		for _, p := range []string{"files/"} {
			for _, n := range []string{"logs/app.log", "logs/app.log.gz", "drop/in.bin"} {
				removeState(t, g, p+record.NameKey(n))
			}
		}
		sum := sha256.Sum256([]byte(text))
		putState("digests/"+record.NameKey("logs/app.log"), map[string]string{"name": "logs/app.log", "etag": etag["logs/app.log"], "sha256": hex.EncodeToString(sum[:])})
		putState("quota/owners/"+record.NameKey("logs/app.log"), map[string]any{"name": "logs/app.log", "user": "alice", "size": len(text), "etag": etag["logs/app.log"]})
		putState("sidecars/"+record.NameKey("logs/app.log.gz"), map[string]string{"name": "logs/app.log.gz", "etag": etag["logs/app.log.gz"], "source": etag["logs/app.log"]})
		expires := time.Now().Add(time.Hour).UTC()
		putState("expiry/"+record.NameKey("drop/in.bin"), map[string]any{"name": "drop/in.bin", "etag": etag["drop/in.bin"], "landed": time.Now().UTC(), "expires": expires, "link": "L1"})

		s = startServerOn(t, g, "--access", access)
		if got, want := headDigest(t, s.URL+"logs/app.log"), reprDigestOf(t, hex.EncodeToString(sum[:])); got != want {
			t.Errorf("the digest recorded before the upgrade: %q; want %q", got, want)
		}
		if resp := get(t, s.URL+"logs/app.log", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("the sidecar recorded before the upgrade is not sent: %v", resp.Header)
		}
		if l := listed(t, s.URL+"logs/"); l["app.log.gz"] != nil {
			t.Error("largo's sidecar, recorded before the upgrade, is listed as a file of its own")
		}
		if _, ok := listed(t, s.URL+"drop/")["in.bin"]["expires"]; !ok {
			t.Error("the expiry recorded before the upgrade is not shown")
		}
		// The owner still counts: a pass finds alice's file by its record.
		if u := quotaUsage(t, g, access, true)["user alice"]; u != [2]int64{int64(len(text)), 1} {
			t.Errorf("alice's usage after the upgrade: %v; want her %d bytes in 1 file", u, len(text))
		}
		// The old records went, but the expiry index; the new ones are there.
		if !waitFor(10*time.Second, func() bool { return stateExists(t, g, "migrated/files-v1") }) {
			t.Error("the migration did not finish")
		}
		for _, key := range []string{"digests/" + record.NameKey("logs/app.log"), "quota/owners/" + record.NameKey("logs/app.log"), "sidecars/" + record.NameKey("logs/app.log.gz")} {
			if stateExists(t, g, key) {
				t.Errorf("%s is still there after the migration", key)
			}
		}
		if !stateExists(t, g, "expiry/"+record.NameKey("drop/in.bin")) {
			t.Error("the expiry index went")
		}
		var owner record.File
		for _, rec := range fileRecords(t, g.dir) {
			if rec.Name == "logs/app.log" {
				owner = rec
			}
		}
		if owner.Owner != "alice" || owner.SHA256 == "" || owner.ETag != etag["logs/app.log"] || len(owner.Sidecars) != 1 || owner.Sidecars[0] != ".gz" {
			t.Errorf("the record of logs/app.log: %+v", owner)
		}
		// The sidecar follows its file: removed with it.
		if resp, body := send(t, "DELETE", s.URL+"logs/app.log", nil, 0, "Authorization", tokenOf("alice")); resp.StatusCode != 204 {
			t.Fatalf("DELETE logs/app.log: %d %s", resp.StatusCode, body)
		}
		if !waitFor(5*time.Second, func() bool { return !g.exists("logs/app.log.gz") }) {
			t.Error("the sidecar recorded before the upgrade outlived its file")
		}
	})
}

// gzipped returns b compressed with gzip.
func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stateExists reports whether the state area of g holds key.
func stateExists(t *testing.T, g *target, key string) bool {
	_, err := os.Stat(filepath.Join(g.dir, ".largo", filepath.FromSlash(key)))
	return err == nil
}

// removeState removes key from the state area of g.
func removeState(t *testing.T, g *target, key string) {
	t.Helper()
	os.Remove(filepath.Join(g.dir, ".largo", filepath.FromSlash(key)))
}
