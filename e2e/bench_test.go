//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"largo/s3/s3test"
)

// BenchmarkDownload downloads one 256 MiB file from a folder and from a
// bucket (versitygw on loopback) with 1, 5 and 20 clients at once, each
// through a fresh largo process, and reports the throughput and largo's
// peak RSS above its idle RSS. Run it alone, the machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Download -benchtime 3x
func BenchmarkDownload(b *testing.B) {
	const size = 256 << 20
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.bin")
	writeRandom(b, path, size, 30)
	srv := s3test.Start(b, s3test.Options{})
	// Put as a client puts it: a file placed in versitygw's folder behind
	// its back has no stored type, and versitygw reports it as
	// text/plain, which largo would gzip for a client that accepts it.
	srv.PutFile(b, "bench.bin", path)

	for _, store := range []string{"disk", "s3"} {
		for _, clients := range []int{1, 5, 20} {
			b.Run(fmt.Sprintf("%s/clients=%d", store, clients), func(b *testing.B) {
				var s *server
				if store == "disk" {
					s = startServer(b, dir)
				} else {
					s = startS3Largo(b, srv, "")
				}
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
				download := func() error {
					resp, err := client.Get(s.URL + "bench.bin")
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					n, err := io.Copy(io.Discard, resp.Body)
					if err == nil && n != size {
						err = fmt.Errorf("%d of %d bytes", n, size)
					}
					return err
				}
				if err := download(); err != nil { // warm the caches and pools
					b.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
				idle, w := s.memory().RSS, s.watchPeak()
				b.SetBytes(size * int64(clients))
				b.ResetTimer()
				for range b.N {
					var wg sync.WaitGroup
					errs := make(chan error, clients)
					for range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if err := download(); err != nil {
								errs <- err
							}
						}()
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
				b.ReportMetric(float64(w.peak()-idle)/(1<<20), "peak-above-idle-MiB")
			})
		}
	}
}

// BenchmarkUpload PUTs a 1 GiB file, its length announced and chunked, to
// a folder and to a bucket (versitygw on loopback, the default part
// settings), each case through a fresh largo process, and reports the
// throughput and largo's peak RSS above its idle RSS. Run it alone, the
// machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Upload -benchtime 2x
func BenchmarkUpload(b *testing.B) {
	const size = 1 << 30
	src := filepath.Join(b.TempDir(), "upload.bin")
	writeRandom(b, src, size, 40)
	for _, store := range []string{"disk", "s3"} {
		for _, body := range []string{"length", "chunked"} {
			b.Run(store+"/"+body, func(b *testing.B) {
				var s *server
				if store == "disk" {
					s = startServer(b, b.TempDir(), "--upload", "--token", testToken)
				} else {
					s = startS3Largo(b, s3test.Start(b, s3test.Options{}), "", "--upload", "--token", testToken)
				}
				upload := func() error {
					f, err := os.Open(src)
					if err != nil {
						return err
					}
					defer f.Close()
					req, err := http.NewRequest("PUT", s.URL+"bench.bin", f)
					if err != nil {
						return err
					}
					req.Header.Set("Authorization", "Bearer "+testToken)
					req.ContentLength = size
					if body == "chunked" {
						req.ContentLength = -1
						req.Body = io.NopCloser(f)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return err
					}
					resp.Body.Close()
					if resp.StatusCode != 201 && resp.StatusCode != 204 {
						return fmt.Errorf("PUT: %s", resp.Status)
					}
					return nil
				}
				get(b, s.URL+"_largo/healthz")
				time.Sleep(200 * time.Millisecond)
				idle, w := s.memory().RSS, s.watchPeak()
				b.SetBytes(size)
				b.ResetTimer()
				for range b.N {
					if err := upload(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
				b.ReportMetric(float64(w.peak()-idle)/(1<<20), "peak-above-idle-MiB")
			})
		}
	}
}
