//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"largo/encode"
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
				idle, w := s.idleRSS(), s.watchPeak()
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
				reportMemory(b, idle, w)
			})
		}
	}
}

// BenchmarkUpload PUTs a 1 GiB file, its length announced and chunked,
// and POSTs it as a browser's form, to a folder and to a bucket
// (versitygw on loopback, the default part settings), each case through a
// fresh largo process, and reports the throughput and largo's peak RSS
// above its idle RSS. Run it alone, the machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Upload -benchtime 2x
func BenchmarkUpload(b *testing.B) {
	const size = 1 << 30
	src := filepath.Join(b.TempDir(), "upload.bin")
	writeRandom(b, src, size, 40)
	for _, store := range []string{"disk", "s3"} {
		for _, body := range []string{"length", "chunked", "form"} {
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
					var req *http.Request
					switch body {
					case "form":
						req, err = formRequest(s.URL, "bench.bin", f)
					default:
						req, err = http.NewRequest("PUT", s.URL+"bench.bin", f)
					}
					if err != nil {
						return err
					}
					req.Header.Set("Authorization", "Bearer "+testToken)
					switch body {
					case "length":
						req.ContentLength = size
					case "chunked":
						req.ContentLength = -1
						req.Body = io.NopCloser(f)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return err
					}
					resp.Body.Close()
					if resp.StatusCode != 201 && resp.StatusCode != 204 {
						return fmt.Errorf("%s: %s", req.Method, resp.Status)
					}
					return nil
				}
				get(b, s.URL+"_largo/healthz")
				idle, w := s.idleRSS(), s.watchPeak()
				b.SetBytes(size)
				b.ResetTimer()
				for range b.N {
					if err := upload(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportMemory(b, idle, w)
			})
		}
	}
}

// formRequest is a POST to the folder at url of a multipart form holding
// r as the file name, written into the request as it is sent.
func formRequest(url, name string, r io.Reader) (*http.Request, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, err := http.NewRequest("POST", url, pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	go func() {
		fw, err := mw.CreateFormFile("files", name)
		if err == nil {
			_, err = io.Copy(fw, r)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return req, nil
}

// BenchmarkStalledClient asks for a 5 GiB file, from a folder and from a
// bucket (versitygw on loopback), on a connection that never reads, holds
// it 2 s and closes it, against one largo process per store, and reports
// what the stall cost largo: the bytes it read meanwhile (off the file, or
// from the store) and its peak RSS above idle. Run it alone, the machine
// otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench StalledClient -benchtime 3x
func BenchmarkStalledClient(b *testing.B) {
	const size = 5 << 30
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "stall.bin"))
	if err != nil {
		b.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, warmUpFile), []byte(warmUpBody), 0o644); err != nil {
		b.Fatal(err)
	}
	srv := s3test.Start(b, s3test.Options{})
	srv.PlaceSparse(b, "stall.bin", size, []byte("end"))
	srv.Put(b, warmUpFile, []byte(warmUpBody))
	for _, store := range []string{"disk", "s3"} {
		b.Run(store, func(b *testing.B) {
			var s *server
			if store == "disk" {
				s = startServer(b, dir)
			} else {
				s = startS3Largo(b, srv, "")
			}
			s.warmUp(warmUpFile)
			idle, w := s.idleRSS(), s.watchPeak()
			read0 := s.rchar()
			b.ResetTimer()
			for range b.N {
				c := stalledGet(b, s.Addr, "/stall.bin")
				time.Sleep(2 * time.Second) // the client stalls
				c.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(s.rchar()-read0)/1e6/float64(b.N), "read-MB/op")
			reportMemory(b, idle, w)
		})
	}
}

// BenchmarkArchive downloads a folder holding a 5 GiB sparse file as tar
// and as zip from one largo process, each whole, and reports the
// throughput and largo's peak RSS above idle. Run it alone, the machine
// otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Archive -benchtime 2x
func BenchmarkArchive(b *testing.B) {
	parent, _ := archiveTree(b)
	s := startServer(b, filepath.Dir(parent))
	s.warmUp("set/top.txt")
	for _, kind := range []string{"tar", "zip"} {
		b.Run(kind, func(b *testing.B) {
			download := func() int64 {
				resp, err := http.Get(s.URL + "set/?archive=" + kind)
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				n, err := io.Copy(io.Discard, resp.Body)
				if err != nil || resp.StatusCode != 200 || n != resp.ContentLength {
					b.Fatalf("%s: %s, %d of %d bytes, %v", kind, resp.Status, n, resp.ContentLength, err)
				}
				return n
			}
			n := download() // the archive's code and buffers are in
			idle, w := s.idleRSS(), s.watchPeak()
			b.SetBytes(n)
			b.ResetTimer()
			for range b.N {
				download()
			}
			b.StopTimer()
			reportMemory(b, idle, w)
		})
	}
}

// BenchmarkListings asks 40 clients at once for the JSON and HTML listings
// of a folder of 50,000 files, and reports how many were complete and how
// many refused as busy (503), and largo's peak RSS above idle: the
// listings share one memory budget. Run it alone, the machine otherwise
// quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Listings -benchtime 3x
func BenchmarkListings(b *testing.B) {
	const clients, files = 40, 50_000
	dir := b.TempDir()
	makeEmptyFiles(b, dir, files)
	s := startServer(b, dir)
	concurrentListings(b, s.URL, 1, files) // the listing's code is in
	idle, w := s.idleRSS(), s.watchPeak()
	var ok, busy int
	b.ResetTimer()
	for range b.N {
		o, bz := concurrentListings(b, s.URL, clients, files)
		ok, busy = ok+o, busy+bz
	}
	b.StopTimer()
	b.ReportMetric(float64(ok)/float64(b.N), "complete/op")
	b.ReportMetric(float64(busy)/float64(b.N), "busy/op")
	reportMemory(b, idle, w)
}

// BenchmarkCompress runs 20 concurrent dynamic compressions of a 300 MB
// log (zstd, brotli and gzip in turn) through one largo process at the
// default level, and reports the throughput, largo's peak RSS above idle,
// and that growth per compressing response beside the bound encode
// promises for one (encode.Encoders.MemoryPerStream). Run it alone, the
// machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench Compress -benchtime 2x
func BenchmarkCompress(b *testing.B) {
	const clients, size = 20, 300 << 20
	dir := b.TempDir()
	logSHA := writeLog(b, filepath.Join(dir, "big.log"), size)
	writeLog(b, filepath.Join(dir, "small.log"), 64<<10)
	s := startServer(b, dir, "--compress-streams", strconv.Itoa(clients))
	for _, c := range []string{"zstd", "br", "gzip"} { // each coding's code is in
		decodedSHA(b, get(b, s.URL+"small.log", "Accept-Encoding", c).Body, c)
	}
	idle, w := s.idleRSS(), s.watchPeak()
	b.SetBytes(clients * size)
	b.ResetTimer()
	for range b.N {
		compressConcurrently(b, s.URL+"big.log", clients, logSHA)
	}
	b.StopTimer()
	enc, err := encode.NewEncoders(encode.Config{})
	if err != nil {
		b.Fatal(err)
	}
	grown := w.peak() - idle
	b.ReportMetric(float64(grown)/clients/(1<<20), "peak-above-idle-per-stream-MiB")
	b.ReportMetric(float64(enc.MemoryPerStream())/(1<<20), "bound-per-stream-MiB")
	reportMemory(b, idle, w)
}
