package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMetrics(t *testing.T) {
	m := New([]string{"complete", "aborted"})
	m.TransferStarted()
	m.TransferStarted()
	m.BytesSent(1000)
	m.BytesSent(24)
	m.TransferEnded("aborted")
	m.TransferStarted()
	m.TransferEnded("timeout") // an outcome not given to New
	m.Panicked()
	m.Compressed("zstd", "dynamic")
	m.Compressed("zstd", "dynamic")
	m.Compressed("br", "refused")
	m.Throttled("address", 1500*time.Millisecond)
	m.Throttled("address", 500*time.Millisecond)
	m.Throttled("link", 0)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	out := string(b)
	for _, want := range []string{
		"largo_transfers_active 1",
		"largo_bytes_sent_total 1024",
		`largo_transfers_total{outcome="aborted"} 1`,
		`largo_transfers_total{outcome="complete"} 0`,
		`largo_transfers_total{outcome="timeout"} 1`,
		"largo_panics_total 1",
		`largo_compressed_responses_total{coding="zstd",source="dynamic"} 2`,
		`largo_compressed_responses_total{coding="br",source="refused"} 1`,
		`largo_throttled_seconds_total{key="address"} 2`,
		`largo_throttled_seconds_total{key="link"} 0`,
		"process_resident_memory_bytes",
		"go_goroutines",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}

// BenchmarkTransfer is the metrics' share of one request for the file tree.
func BenchmarkTransfer(b *testing.B) {
	m := New([]string{"complete", "aborted"})
	b.ReportAllocs()
	for b.Loop() {
		m.TransferStarted()
		m.BytesSent(4096)
		m.TransferEnded("complete")
	}
}
