//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"largo/s3/s3test"
)

// BenchmarkHotObject downloads one 1 GiB file with 20 clients at once,
// side by side in one run: from a folder, from a bucket (versitygw on
// loopback) as largo reads it without a cache, from the bucket through a
// slice cache (--s3-cache) that starts empty, so that the first
// iteration fills it while the clients download (cached-cold), and
// through the same cache, filled, after a restart (cached-warm). Each
// case runs in a fresh largo process; each reports the throughput,
// largo's peak RSS above its idle RSS, and for the cached cases what the
// bucket served, counted by a proxy in front of it: its GETs and the
// bytes they carried as a multiple of the object (bucket-reads, 1 when
// the object was read once), warm-up included. With -count, each cold
// case starts from an empty cache again. Run it alone, the machine
// otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench HotObject -benchtime 1x
func BenchmarkHotObject(b *testing.B) {
	const (
		size    = 1 << 30
		clients = 20
	)
	dir := b.TempDir()
	path := filepath.Join(dir, "hot.bin")
	writeRandom(b, path, size, 40)
	srv := s3test.Start(b, s3test.Options{})
	srv.PutFile(b, "hot.bin", path)
	root := b.TempDir()
	var cache string // the cold case's, which the warm one reuses
	colds := 0

	for _, kind := range []string{"folder", "bucket", "bucket-cached-cold", "bucket-cached-warm"} {
		b.Run(kind, func(b *testing.B) {
			var s *server
			var proxy *s3test.Proxy
			switch kind {
			case "folder":
				s = startServer(b, dir)
			case "bucket":
				s = startS3Largo(b, srv, "")
			default:
				if kind == "bucket-cached-cold" {
					colds++
					cache = filepath.Join(root, fmt.Sprintf("slices%d", colds))
				}
				proxy = srv.Proxy(b)
				s = startLargo(b, []string{"serve", "--store", "s3://" + srv.Bucket + "/", "--listen", "127.0.0.1:0", "--s3-cache", cache, "--s3-cache-size", "2GiB"}, proxy.Env())
				proxy.Reset()
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			download := func(rg string) error {
				req, err := http.NewRequest("GET", s.URL+"hot.bin", nil)
				if err != nil {
					return err
				}
				want := int64(size)
				if rg != "" {
					req.Header.Set("Range", rg)
					want = 1
				}
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				n, err := io.Copy(io.Discard, resp.Body)
				if err == nil && n != want {
					err = fmt.Errorf("%d of %d bytes", n, want)
				}
				return err
			}
			// Warm the pools with one byte: for the cache, its first
			// slice (and the next, fetched ahead) of the 128.
			if err := download("bytes=0-0"); err != nil {
				b.Fatal(err)
			}
			idle, w := s.idleRSS(), s.watchPeak()
			b.SetBytes(size * clients)
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				for range clients {
					wg.Go(func() {
						if err := download(""); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportMemory(b, idle, w)
			if proxy != nil {
				counts, _ := proxy.Counts()
				bytes, _ := proxy.Bytes()
				b.ReportMetric(float64(counts["GET object"]), "bucket-GETs")
				b.ReportMetric(float64(bytes["GET object"])/size, "bucket-reads")
			}
		})
	}
}
