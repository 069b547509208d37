//go:build e2e

package e2e

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/internal/testenv"
	"largo/proc"
)

// cpu returns the server's CPU time so far.
func (s *server) cpu(t testing.TB) float64 {
	t.Helper()
	st, err := proc.ReadStat(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	return st.CPU.Seconds()
}

// TestArchiveLengthOfATerabyte asks for the length of archives of a
// folder of four sparse files of 256 GiB: the answer comes from the
// listing, so the server reads no file data and spends next to no CPU
// (summing CRC-32 over a terabyte of zeros took half a minute). The zip
// of a small tree, fetched whole, passes unzip -t.
func TestArchiveLengthOfATerabyte(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "huge")
	os.MkdirAll(dir, 0o755)
	const each = 256 << 30
	for i := range 4 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("disk%d.img", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(each); err != nil {
			f.Close()
			testenv.Missing(t, "the test folder's filesystem holds no sparse file of 256 GiB (%v): point TMPDIR at one that does (ext4, xfs, tmpfs)", err)
		}
		f.Close()
	}
	writeRandom(t, filepath.Join(root, "small", "a.bin"), 100_000, 21)
	writeRandom(t, filepath.Join(root, "small", "sub", "b.bin"), 10, 22)
	s := startServer(t, root)

	for _, format := range []string{"zip", "tar"} {
		io0, cpu0 := s.rchar(), s.cpu(t)
		req, _ := http.NewRequest("HEAD", s.URL+"huge/?archive="+format, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		read, cpu := s.rchar()-io0, s.cpu(t)-cpu0
		t.Logf("HEAD ?archive=%s of 1 TiB: length %d, read %d bytes, CPU %.2f s", format, resp.ContentLength, read, cpu)
		if resp.StatusCode != 200 || resp.ContentLength < 4*each {
			t.Errorf("%s: %d, length %d", format, resp.StatusCode, resp.ContentLength)
		}
		if read > 1<<20 {
			t.Errorf("%s: the server read %d bytes to size the archive", format, read)
		}
		if cpu > 2 {
			t.Errorf("%s: the server spent %.1f s of CPU to size the archive", format, cpu)
		}
	}

	resp := get(t, s.URL+"small/?archive=zip")
	p := filepath.Join(t.TempDir(), "small.zip")
	f, _ := os.Create(p)
	n, err := io.Copy(f, resp.Body)
	f.Close()
	if err != nil || n != resp.ContentLength {
		t.Fatalf("zip: %d of %d bytes, %v", n, resp.ContentLength, err)
	}
	if zr, err := zip.OpenReader(p); err != nil || len(zr.File) != 4 {
		t.Fatalf("Go's zip reader: %v", err)
	} else {
		zr.Close()
	}
	unzip := need(t, "unzip")
	if out, err := exec.Command(unzip, "-t", p).CombinedOutput(); err != nil || !strings.Contains(string(out), "No errors detected") {
		t.Errorf("unzip -t: %v\n%s", err, out)
	}
}

// TestConcurrentListings asks 40 clients at once for the JSON and HTML
// listings of a folder of 50,000 files: every answer is a complete,
// sorted listing or a 503 with a Retry-After, never another error, and at
// least one is complete. (What they cost in memory, within the listings'
// shared budget, is BenchmarkListings' figure.)
func TestConcurrentListings(t *testing.T) {
	dir := t.TempDir()
	const files = 50_000
	makeEmptyFiles(t, dir, files)
	// Forty clients decoding in one test process read slowly on a busy
	// machine; cutting slow readers is another test's.
	s := startServer(t, dir, "--idle-timeout", "10m", "--min-rate", "0")
	ok, busy := concurrentListings(t, s.URL, 40, files)
	t.Logf("40 listings of %d files: %d complete, %d busy", files, ok, busy)
	if ok == 0 {
		t.Error("no listing completed")
	}
}

// concurrentListings asks clients clients at once for the listing of the
// folder at url, which holds files files, half as JSON and half as HTML,
// and returns how many answers were complete listings and how many 503s
// with a Retry-After; any other answer, or a listing incomplete or out of
// order, fails t.
func concurrentListings(t testing.TB, url string, clients, files int) (ok, busy int) {
	t.Helper()
	type answer struct {
		status  int
		retry   string
		entries int
		err     error
	}
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			a := &answers[i]
			accept := "text/html"
			if i%2 == 0 {
				accept = "application/json"
			}
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			a.status, a.retry = resp.StatusCode, resp.Header.Get("Retry-After")
			if resp.StatusCode != 200 {
				return
			}
			if accept == "application/json" {
				var l struct {
					Entries []struct{ Name string } `json:"entries"`
				}
				if a.err = json.NewDecoder(resp.Body).Decode(&l); a.err == nil {
					a.entries = len(l.Entries)
					for j := 1; j < len(l.Entries); j++ {
						if l.Entries[j-1].Name >= l.Entries[j].Name {
							a.err = fmt.Errorf("entries %d and %d out of order", j-1, j)
							break
						}
					}
				}
				return
			}
			b, err := io.ReadAll(resp.Body)
			a.err, a.entries = err, strings.Count(string(b), "<tr data-name=")
		})
	}
	wg.Wait()
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("client %d: %v", i, a.err)
		case a.status == 200 && a.entries != files:
			t.Errorf("client %d: %d entries of %d", i, a.entries, files)
		case a.status == 200:
			ok++
		case a.status == 503 && a.retry != "":
			busy++
		default:
			t.Errorf("client %d: %d (Retry-After %q)", i, a.status, a.retry)
		}
	}
	return ok, busy
}

// makeEmptyFiles creates n empty files named f0000000... in dir, with a
// few goroutines.
func makeEmptyFiles(t testing.TB, dir string, n int) {
	t.Helper()
	const workers = 4
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%07d", i)), os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					errs <- err
					return
				}
				f.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// TestListingFlags: --listing-budget bounds the memory listings and
// archives share (an archive holds a folder's listing open while it lists
// its subfolders, so a deep one needs more than a flat one), and
// --listing-memory with --listing-temp-dir make a large folder spill its
// sorted runs into that folder, where the server holds them while it
// answers a client that does not read.
func TestListingFlags(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "file.txt"), []byte("x"), 0o644)
	big := filepath.Join(dir, "big")
	os.Mkdir(big, 0o755)
	makeEmptyFiles(t, big, 100_000)
	spill := t.TempDir()

	s := startServer(t, dir, "--listing-memory", "256KiB", "--listing-budget", "256KiB", "--listing-temp-dir", spill)
	// A budget of one listing's least memory: an archive of a folder
	// without subfolders fits, one that must hold a folder's listing open
	// while it lists a subfolder does not.
	req, _ := http.NewRequest("HEAD", s.URL+"a/b/c/?archive=tar", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD of an archive of one folder within 256 KiB: %v, %v", resp, err)
	}
	req, _ = http.NewRequest("HEAD", s.URL+"a/b/?archive=tar", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("HEAD of an archive of two folders within 256 KiB: %v, %v", resp, err)
	}
	d := startServer(t, dir)
	req, _ = http.NewRequest("HEAD", d.URL+"a/b/?archive=tar", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD of an archive of two folders with the default budget: %v, %v", resp, err)
	}

	// 100,000 entries do not fit in 256 KiB: the listing spills. A client
	// that reads only the head keeps the listing, and its runs, open.
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /big/ HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", s.Addr)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	head := make([]byte, 12)
	if _, err := io.ReadFull(c, head); err != nil || string(head) != "HTTP/1.1 200" {
		t.Fatalf("listing of big/: %q, %v", head, err)
	}
	spilled := waitFor(10*time.Second, func() bool { return spillFiles(s.PID, spill) > 0 })
	if !spilled {
		t.Errorf("no sorted run held in %s while the listing of 100,000 files is answered", spill)
	}
}

// spillFiles counts the descriptors of pid open on files in dir (removed
// or not).
func spillFiles(pid int, dir string) int {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(fdDir)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}
