//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"largo/s3/s3test"
)

// recordsAccess gives one user a quota, so that every write is charged
// and its owner recorded.
const recordsAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1GB"

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`

// BenchmarkSmallPuts: 1 KiB PUTs, each replacing one of 100 names, with
// quotas, digests and the notification hooks on (what a write keeps in
// the state area besides its bytes), on a folder and on a bucket: the
// time of a PUT and, on a bucket, the requests it costs the bucket,
// counted by a proxy in front of it (reported per PUT by kind in the
// log).
func BenchmarkSmallPuts(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	for _, kind := range []string{"disk", "s3"} {
		b.Run(kind, func(b *testing.B) {
			access := writeAccessFile(b, recordsAccess)
			args := []string{"--access", access, "--hook-notify", receiver.URL + "/notify", "--hook-secret-file", hookSecretFile(b)}
			var s *server
			var proxy *s3test.Proxy
			if kind == "disk" {
				s = startServer(b, b.TempDir(), args...)
			} else {
				srv := s3test.Start(b, s3test.Options{})
				proxy = srv.Proxy(b)
				s = startLargo(b, append([]string{"serve", "--store", "s3://" + srv.Bucket + "/", "--listen", "127.0.0.1:0"}, args...), proxy.Env())
			}
			body := strings.Repeat("x", 1024)
			put := func(i int) {
				resp, text := send(b, "PUT", fmt.Sprintf("%sdata/f%03d.txt", s.URL, i%100), strings.NewReader(body), int64(len(body)), "Authorization", tokenOf("alice"))
				if resp.StatusCode >= 300 {
					b.Fatalf("PUT: %d %s", resp.StatusCode, text)
				}
			}
			for i := range 100 { // every name there: each PUT below replaces one
				put(i)
			}
			time.Sleep(time.Second) // the hooks' sends of the warm-up out of the count
			if proxy != nil {
				proxy.Reset()
			}
			if proxy != nil && testing.Verbose() {
				proxy.Trace(true)
				put(1)
				time.Sleep(time.Second)
				b.Logf("the requests of one PUT:\n%s", strings.Join(proxy.Lines(), "\n"))
				proxy.Trace(false)
				proxy.Reset()
			}
			b.ResetTimer()
			for i := range b.N {
				put(i)
			}
			b.StopTimer()
			if proxy != nil {
				counts, total := proxy.Counts()
				b.ReportMetric(float64(total)/float64(b.N), "bucket-requests/op")
				b.Logf("bucket requests per PUT, by kind, over %d PUTs: %s", b.N, s3test.Summary(perOp(counts, b.N)))
			}
		})
	}
}

// perOp divides counts by n, rounded to tenths (kept as tenths in the
// map's values' keys for printing).
func perOp(counts map[string]int, n int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		out[fmt.Sprintf("%s (%.1f/PUT)", k, float64(v)/float64(n))] = v
	}
	return out
}
