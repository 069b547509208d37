package dav

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// manyProps is a PROPPATCH body that sets n small properties.
func manyProps(n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>`)
	for i := range n {
		fmt.Fprintf(&b, `<Z:p%05d xmlns:Z="urn:x">v</Z:p%05d>`, i, i)
	}
	b.WriteString(`</D:prop></D:set></D:propertyupdate>`)
	return b.String()
}

// heapPeak samples the live heap every millisecond until stopped, and
// returns the highest figure seen.
func heapPeak() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkProppatchMany sends one PROPPATCH of n small properties per
// iteration (20,000 of them: 738 KB) and reports, besides the bytes
// allocated, the highest live heap seen above the heap before the
// request (heap-B/op).
func BenchmarkProppatchMany(b *testing.B) {
	for _, n := range []int{MaxRequestProps, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			srv, _, _ := newServer(b, dir)
			body := manyProps(n)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var grown uint64
			for b.Loop() {
				runtime.GC()
				s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
				metrics.Read(s)
				before := s[0].Value.Uint64()
				stop := heapPeak()
				req, err := http.NewRequest("PROPPATCH", srv.URL+"/f.txt", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if peak := stop(); peak > before {
					grown += peak - before
				}
				if resp.StatusCode >= 500 {
					b.Fatalf("PROPPATCH: %d", resp.StatusCode)
				}
			}
			b.ReportMetric(float64(grown)/float64(b.N), "heap-B/op")
		})
	}
}
