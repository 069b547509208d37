// Package metrics holds all of largo's Prometheus code: the collectors, the
// registry they are registered with, and the handler that exposes them.
// The rest of largo reports events through small interfaces declared where
// they are used (serve.Observer, serve.UploadObserver,
// serve.CompressionObserver, resumable.Observer, hooks.Observer); this
// package implements them.
//
// The process collector is included on purpose: resident memory and open
// descriptors, not the Go heap, are the figures that show whether a file
// server holds files in memory or leaks them.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the set of largo's collectors. It is safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	active    prometheus.Gauge
	bytesSent prometheus.Counter
	transfers *prometheus.CounterVec
	ended     map[string]prometheus.Counter // transfers' counters for the outcomes known at New
	panics    prometheus.Counter

	bytesReceived prometheus.Counter
	uploads       *prometheus.CounterVec
	pending       prometheus.Gauge

	compressed *prometheus.CounterVec

	throttled *prometheus.CounterVec

	hooks hookMetrics
}

// New creates the collectors and registers them, with the process and Go
// runtime collectors, in reg. outcomes are the outcome labels to create
// from the start, so every series exists before its first event.
func New(reg *prometheus.Registry, outcomes []string) *Metrics {
	m := &Metrics{
		reg: reg,
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "largo_transfers_active",
			Help: "Requests for the file tree being served now.",
		}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "largo_bytes_sent_total",
			Help: "Body bytes sent to clients.",
		}),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_transfers_total",
			Help: "Requests for the file tree served, by how they ended.",
		}, []string{"outcome"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "largo_panics_total",
			Help: "Requests that panicked and were recovered.",
		}),
		bytesReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "largo_bytes_received_total",
			Help: "Body bytes received from uploading clients.",
		}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_uploads_total",
			Help: "Uploads (PUT, form POST, finished or abandoned resumable uploads), by how they ended.",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "largo_upload_pending_bytes",
			Help: "Bytes held in uploads not finished yet (temporary files and resumable uploads).",
		}),
		compressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_compressed_responses_total",
			Help: "Responses sent compressed, by coding and source (sidecar or dynamic); source refused counts those sent uncompressed because every compression slot was taken.",
		}, []string{"coding", "source"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_throttled_seconds_total",
			Help: "Time transfers waited for a bandwidth cap, summed over transfers, by the kind of cap that held them longest (transfer, user, address, link).",
		}, []string{"key"}),
	}
	// The known outcomes' counters are resolved once: the map is only
	// read after New, and a lookup in it is cheaper than the vector's
	// hashing and locking on every request.
	m.ended = make(map[string]prometheus.Counter, len(outcomes))
	for _, o := range outcomes {
		m.ended[o] = m.transfers.WithLabelValues(o)
		m.uploads.WithLabelValues(o)
	}
	reg.MustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		m.active, m.bytesSent, m.transfers, m.panics,
		m.bytesReceived, m.uploads, m.pending,
		m.compressed, m.throttled,
	)
	m.hooks = newHookMetrics(reg)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// TransferStarted implements serve.Observer.
func (m *Metrics) TransferStarted() { m.active.Inc() }

// BytesSent implements serve.Observer.
func (m *Metrics) BytesSent(n int64) { m.bytesSent.Add(float64(n)) }

// TransferEnded implements serve.Observer.
func (m *Metrics) TransferEnded(outcome string) {
	m.active.Dec()
	if c, ok := m.ended[outcome]; ok {
		c.Inc()
		return
	}
	m.transfers.WithLabelValues(outcome).Inc()
}

// Panicked implements serve.Observer.
func (m *Metrics) Panicked() { m.panics.Inc() }

// BytesReceived implements serve.UploadObserver.
func (m *Metrics) BytesReceived(n int64) { m.bytesReceived.Add(float64(n)) }

// UploadEnded implements serve.UploadObserver and resumable.Observer.
func (m *Metrics) UploadEnded(outcome string) { m.uploads.WithLabelValues(outcome).Inc() }

// PendingBytes implements serve.UploadObserver and resumable.Observer.
func (m *Metrics) PendingBytes(delta int64) { m.pending.Add(float64(delta)) }

// Compressed implements serve.CompressionObserver.
func (m *Metrics) Compressed(coding, source string) {
	m.compressed.WithLabelValues(coding, source).Inc()
}

// Throttled adds d to the time transfers waited for a bandwidth cap of
// kind (package pace's Config.Throttled, by the kind's name). A d of zero
// makes the kind's series exist before its first wait.
func (m *Metrics) Throttled(kind string, d time.Duration) {
	m.throttled.WithLabelValues(kind).Add(d.Seconds())
}
