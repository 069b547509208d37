// Package metrics counts what largo does and exposes it, with the Go
// runtime's and the process's own figures, in Prometheus's text exposition
// format (version 0.0.4): counters and gauges, with or without labels,
// each family with its HELP and TYPE lines, in the order of their names.
// The rest of largo reports events through small interfaces declared where
// they are used (serve.Observer, serve.UploadObserver,
// serve.CompressionObserver, resumable.Observer, hooks.Observer); this
// package implements them.
//
// The exposition is written here rather than by the Prometheus client
// library, whose registry brings protobuf and its descriptors into every
// start of the binary, initialisers and all, for a format largo does not
// serve: the names, labels and paths are the ones that library gave them,
// its Go and process collectors' included.
//
// The process collector is included on purpose: resident memory and open
// descriptors, not the Go heap, are the figures that show whether a file
// server holds files in memory or leaks them.
package metrics

import (
	"net/http"
	"time"
)

// Metrics is the set of largo's metrics. It is safe for concurrent use.
type Metrics struct {
	reg       *registry
	active    *value
	bytesSent *value
	transfers *vec
	ended     map[string]*value // transfers' counters for the outcomes known at New
	panics    *value

	bytesReceived *value
	uploads       *vec
	pending       *value

	compressed *vec

	throttled *vec

	hooks hookMetrics
}

// New creates the metrics, with the process's and the Go runtime's.
// outcomes are the outcome labels to create from the start, so every
// series exists before its first event.
func New(outcomes []string) *Metrics {
	m := &Metrics{
		reg:           &registry{errors: newVec("promhttp_metric_handler_errors_total", "Errors of the metrics' handler, by cause: encoding (the answer could not be written), gathering (a figure could not be read).", kindCounter, "cause")},
		active:        new(value),
		bytesSent:     new(value),
		transfers:     newVec("largo_transfers_total", "Requests for the file tree served, by how they ended.", kindCounter, "outcome"),
		panics:        new(value),
		bytesReceived: new(value),
		uploads:       newVec("largo_uploads_total", "Uploads (PUT, form POST, finished or abandoned resumable uploads), by how they ended.", kindCounter, "outcome"),
		pending:       new(value),
		compressed:    newVec("largo_compressed_responses_total", "Responses sent compressed, by coding and source (sidecar or dynamic); source refused counts those sent uncompressed because every compression slot was taken.", kindCounter, "coding", "source"),
		throttled:     newVec("largo_throttled_seconds_total", "Time transfers waited for a bandwidth cap, summed over transfers, by the kind of cap that held them longest (transfer, user, address, link).", kindCounter, "key"),
	}
	// The known outcomes' counters are resolved once: the map is only
	// read after New, and a lookup in it is cheaper than the vector's
	// joining and locking on every request.
	m.ended = make(map[string]*value, len(outcomes))
	for _, o := range outcomes {
		m.ended[o] = m.transfers.with(o)
		m.uploads.with(o)
	}
	for _, c := range []string{"encoding", "gathering"} {
		m.reg.errors.with(c)
	}
	m.reg.add(
		m.reg.process, goRuntime, m.reg.errors.source,
		single("largo_transfers_active", "Requests for the file tree being served now.", kindGauge, m.active),
		single("largo_bytes_sent_total", "Body bytes sent to clients.", kindCounter, m.bytesSent),
		m.transfers.source,
		single("largo_panics_total", "Requests that panicked and were recovered.", kindCounter, m.panics),
		single("largo_bytes_received_total", "Body bytes received from uploading clients.", kindCounter, m.bytesReceived),
		m.uploads.source,
		single("largo_upload_pending_bytes", "Bytes held in uploads not finished yet (temporary files and resumable uploads).", kindGauge, m.pending),
		m.compressed.source, m.throttled.source,
	)
	m.hooks = newHookMetrics(m.reg)
	return m
}

// Handler serves the metrics in the text exposition format.
func (m *Metrics) Handler() http.Handler { return m.reg }

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
	m.transfers.with(outcome).Inc()
}

// Panicked implements serve.Observer.
func (m *Metrics) Panicked() { m.panics.Inc() }

// BytesReceived implements serve.UploadObserver.
func (m *Metrics) BytesReceived(n int64) { m.bytesReceived.Add(float64(n)) }

// UploadEnded implements serve.UploadObserver and resumable.Observer.
func (m *Metrics) UploadEnded(outcome string) { m.uploads.with(outcome).Inc() }

// PendingBytes implements serve.UploadObserver and resumable.Observer.
func (m *Metrics) PendingBytes(delta int64) { m.pending.Add(float64(delta)) }

// Compressed implements serve.CompressionObserver.
func (m *Metrics) Compressed(coding, source string) {
	m.compressed.with(coding, source).Inc()
}

// Throttled adds d to the time transfers waited for a bandwidth cap of
// kind (package pace's Config.Throttled, by the kind's name). A d of zero
// makes the kind's series exist before its first wait.
func (m *Metrics) Throttled(kind string, d time.Duration) {
	m.throttled.with(kind).Add(d.Seconds())
}
