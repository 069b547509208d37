package transfer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServeFile sends a 256 MiB file over loopback three ways, side by
// side: straight to net/http's ResponseWriter (sendfile), through Response
// (must cost nothing: sendfile is kept), and through a wrapper that hides
// io.ReaderFrom (what a careless wrapper costs: every byte copied through
// user space). cpu-ms/GiB is the process's user and system time, client
// included, per GiB sent.
//
//	go test -run XXX -bench ServeFile -count 5 ./transfer
func BenchmarkServeFile(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range size / len(buf) {
		f.Write(buf)
	}
	f.Close()

	wrappers := []struct {
		name string
		wrap func(http.ResponseWriter) http.ResponseWriter
	}{
		{"direct", func(w http.ResponseWriter) http.ResponseWriter { return w }},
		{"wrapped", func(w http.ResponseWriter) http.ResponseWriter {
			return NewResponse(w, Options{IdleTimeout: time.Minute})
		}},
		{"no-readerfrom", func(w http.ResponseWriter) http.ResponseWriter { return writeOnly{w} }},
	}
	for _, wr := range wrappers {
		b.Run(wr.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f, err := os.Open(p)
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				defer f.Close()
				fi, _ := f.Stat()
				w.Header().Set("Content-Type", "application/octet-stream")
				http.ServeContent(wr.wrap(w), r, "f", fi.ModTime(), f)
			}))
			defer srv.Close()
			client := srv.Client()
			b.SetBytes(size)
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != size {
					b.Fatalf("read %d bytes", n)
				}
			}
			b.StopTimer()
			gib := float64(b.N) * size / (1 << 30)
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/gib, "cpu-ms/GiB")
		})
	}
}

// writeOnly hides every optional interface of a ResponseWriter.
type writeOnly struct{ w http.ResponseWriter }

func (o writeOnly) Header() http.Header         { return o.w.Header() }
func (o writeOnly) Write(p []byte) (int, error) { return o.w.Write(p) }
func (o writeOnly) WriteHeader(code int)        { o.w.WriteHeader(code) }

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
