//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// archiveTree builds a folder with a sparse file past 4 GiB (zip64 and
// large tar sizes), small files, an empty folder, a unicode name and
// hidden files, and returns the sha256 of every file that belongs in an
// archive, by its path inside the archive.
func archiveTree(t testing.TB) (dir string, want map[string]string) {
	t.Helper()
	return archiveTreeIn(t, t.TempDir(), true, archiveBig)
}

// archiveBig is the size of the sparse file of archiveTree.
const archiveBig = 5 << 30

// archiveTreeIn builds the tree of archiveTree as root/set, with a sparse
// file of big bytes, and the symlink that leads out if link is set.
func archiveTreeIn(t testing.TB, root string, link bool, big int64) (dir string, want map[string]string) {
	t.Helper()
	dir = filepath.Join(root, "set")
	want = map[string]string{}
	want["set/a/small.bin"] = writeRandom(t, filepath.Join(dir, "a", "small.bin"), 3<<20+5, 10)
	want["set/b/ünï.txt"] = writeRandom(t, filepath.Join(dir, "b", "ünï.txt"), 1000, 11)
	want["set/top.txt"] = writeRandom(t, filepath.Join(dir, "top.txt"), 10, 12)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	os.WriteFile(filepath.Join(dir, ".secret"), []byte("hidden"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".largo", "tmp"), 0o755)
	os.WriteFile(filepath.Join(dir, ".largo", "tmp", "x"), []byte("state"), 0o644)
	if link {
		os.Symlink(root, filepath.Join(dir, "out-link"))
	}

	img := filepath.Join(dir, "big", "disk.img")
	os.MkdirAll(filepath.Dir(img), 0o755)
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("first bytes"), 0)
	f.WriteAt([]byte("last bytes"), big-10)
	f.Close()
	want["set/big/disk.img"] = fileSHA(t, img)
	return dir, want
}

// TestArchives downloads one tree, with a 5 GiB sparse file, as tar and
// as zip, and unpacks both with the system's tools. (What an archive
// costs the server in memory is BenchmarkArchive's figure.)
func TestArchives(t *testing.T) {
	parent, want := archiveTree(t)
	s := startServer(t, filepath.Dir(parent))
	s.warmUp("set/top.txt")
	t.Run("tar", func(t *testing.T) { testArchiveTar(t, s, want, archiveBig) })
	t.Run("zip", func(t *testing.T) { testArchiveZip(t, s, want, archiveBig) })
}

// testArchiveTar checks the tar of the folder set/, whose largest file
// has big bytes, on a server past its warm-up request.
func testArchiveTar(t *testing.T, s *server, want map[string]string, big int64) {
	tarBin := need(t, "tar")
	curl := need(t, "curl")

	// HEAD gives the length in advance.
	resp, err := http.Head(s.URL + "set/?archive=tar")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.ContentLength <= big || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("HEAD: %d, length %d, %s", resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	// curl streams into tar, which hashes each file without writing it.
	scratch := t.TempDir()
	script := fmt.Sprintf(`%s -sSf %q | %s -xf - --to-command='printf "%%s " "$TAR_FILENAME"; sha256sum'`, curl, s.URL+"set/?archive=tar", tarBin)
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = scratch
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("curl | tar: %v\n%s", err, out)
	}
	checkSums(t, string(out), want)
	for _, name := range []string{".secret", ".largo", "out-link"} {
		if strings.Contains(string(out), name) {
			t.Errorf("tar holds %s", name)
		}
		if _, err := os.Lstat(filepath.Join(scratch, "set", name)); err == nil {
			t.Errorf("tar made %s", name)
		}
	}
}

// testArchiveZip checks the zip of the folder set/, whose largest file
// has big bytes, on a server past its warm-up request.
func testArchiveZip(t *testing.T, s *server, want map[string]string, big int64) {
	unzip := need(t, "unzip")

	resp := get(t, s.URL+"set/?archive=zip")
	if resp.StatusCode != 200 || resp.ContentLength <= big || !strings.Contains(resp.Header.Get("Content-Disposition"), "set.zip") {
		t.Fatalf("GET: %d, length %d, %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
	zipPath := filepath.Join(t.TempDir(), "set.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(f, resp.Body)
	f.Close()
	if err != nil || n != resp.ContentLength {
		t.Fatalf("downloaded %d of %d: %v", n, resp.ContentLength, err)
	}
	defer os.Remove(zipPath)
	var sums strings.Builder
	for name := range want {
		cmd := exec.Command(unzip, "-p", zipPath, name)
		out, _ := cmd.StdoutPipe()
		cmd.Start()
		h := sha256.New()
		io.Copy(h, out)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("unzip -p %s: %v", name, err)
		}
		fmt.Fprintf(&sums, "%s %s  -\n", name, hex.EncodeToString(h.Sum(nil)))
	}
	checkSums(t, sums.String(), want)
	list, _ := exec.Command(unzip, "-Z1", zipPath).Output()
	for _, name := range []string{".secret", ".largo", "out-link"} {
		if strings.Contains(string(list), name) {
			t.Errorf("zip holds %s", name)
		}
	}
	if !strings.Contains(string(list), "set/empty/\n") {
		t.Errorf("zip lacks the empty folder:\n%s", list)
	}
}

// checkSums compares lines "NAME SHA  -" with want.
func checkSums(t *testing.T, out string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			got[f[0]] = f[1]
		}
	}
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s: sha256 %q; want %q", name, got[name], sum)
		}
	}
	if len(got) != len(want) {
		t.Errorf("archive holds %d files; want %d:\n%s", len(got), len(want), out)
	}
}

// TestArchiveStalledClient asks for an archive and never reads: the
// server is cut loose after the idle timeout.
func TestArchiveStalledClient(t *testing.T) {
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "d", "x.bin"), 64<<20, 13)
	s := startServer(t, dir, "--idle-timeout", "2s")
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(32 << 10)
	fmt.Fprintf(c, "GET /d/?archive=tar HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "outcome=timeout") }) {
		t.Fatalf("stalled archive client not cut:\n%s", s.stderr.String())
	}
	if n, _ := fdsTo(s, filepath.Join(dir, "d", "x.bin")); n != 0 {
		t.Errorf("file still open after the cut")
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Errorf("cut archive read to a clean end (%d bytes)", n)
	}
}

func TestArchiveBadFormat(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	s := startServer(t, dir)
	if resp := get(t, s.URL+"d/?archive=rar"); resp.StatusCode != 400 {
		t.Errorf("?archive=rar: %d; want 400", resp.StatusCode)
	}
}
