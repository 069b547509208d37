//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/unread"
)

// TestUnreadSearchesBesideAListing: one client (two addresses of one IPv6
// /64, through a trusted proxy) sends 32 searches and never reads their
// answers. It holds at most its share of the listings' budget: past it
// its searches are answered 503, while another client's listing answers
// 200. Once the idle timeout has cut the unread answers, its share is
// given back and its next search answers 200.
func TestUnreadSearchesBesideAListing(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a b ", 60) // a line of the answer: about 800 bytes
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	for i := range 10000 { // an answer of about 8 MB, past what the sockets hold
		if err := os.WriteFile(filepath.Join(dir, "d", fmt.Sprintf("%s%04d.txt", long, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, dir, "--trusted-proxy", "127.0.0.1", "--idle-timeout", "2s", "--max-conns-per-ip", "0")
	search := "GET /_largo/search?path=/&q=a&limit=10000 HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: %s\r\n\r\n"
	codes := map[int]int{}
	for i := range 32 {
		c := unread.Dial(t, s.Addr)
		fmt.Fprintf(c, search, fmt.Sprintf("2001:db8:7:7::%x", 10+i%2))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
		if err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Error("a search refused for want of memory has no Retry-After")
		}
	}
	if codes[200] == 0 || codes[503] == 0 || codes[200]+codes[503] != 32 {
		t.Errorf("the unread searches of one client: %v; want some held (200) and the rest refused (503)", codes)
	}
	for _, accept := range []string{"application/json", "text/html"} {
		resp := get(t, s.URL+"d/", "Accept", accept, "X-Forwarded-For", "192.0.2.8")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("another client's listing (%s) beside the unread searches: %d", accept, resp.StatusCode)
		}
	}
	resp := get(t, s.URL+"d/", "Accept", "application/json", "X-Forwarded-For", "2001:db8:7:7::99")
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a listing of the same /64 while it holds its share: %d; want 503", resp.StatusCode)
	}
	poll.Wait(t, 15*time.Second, "the unread searches to be cut and the client's share given back", func() bool {
		resp := get(t, s.URL+"_largo/search?path=/&q=0001", "X-Forwarded-For", "2001:db8:7:7::10")
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
