package metrics

import "github.com/prometheus/client_golang/prometheus"

// Expired counts the files the expiry sweep removed (package expiry), by
// why they expired. It is safe for concurrent use.
type Expired struct {
	removed *prometheus.CounterVec
}

// Expired makes and registers the expiry's counters; call it once.
func (m *Metrics) Expired() *Expired {
	e := &Expired{removed: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "largo_expired_files_total",
		Help: "Files removed because their time was up, by why: rule (an access file's [[expire]]) or link (a drop box's file TTL).",
	}, []string{"why"})}
	for _, why := range []string{"rule", "link"} {
		e.removed.WithLabelValues(why)
	}
	m.reg.MustRegister(e.removed)
	return e
}

// Expired implements expiry.Observer.
func (e *Expired) Expired(why string) { e.removed.WithLabelValues(why).Inc() }
