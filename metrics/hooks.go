package metrics

import "github.com/prometheus/client_golang/prometheus"

// hookMetrics are the collectors of the hooks (package hooks).
type hookMetrics struct {
	events *prometheus.CounterVec
	outbox prometheus.Gauge
	dead   prometheus.Gauge
	admits *prometheus.CounterVec
}

func newHookMetrics(reg *prometheus.Registry) hookMetrics {
	h := hookMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_hook_events_total",
			Help: "Notifications, by stage: queued in the outbox, delivered (a 2xx), failed (one attempt that got none), parked (made a dead letter: refused too often, or failing past the outbox's age), dropped (not queued: the outbox was full), lost (could not be queued).",
		}, []string{"stage"}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "largo_hook_outbox_depth",
			Help: "Notifications waiting in the outbox, as this server's sender last saw it.",
		}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "largo_hook_dead_letters",
			Help: "Notifications parked as dead letters (largo hooks dead), as this server last counted them.",
		}),
		admits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "largo_hook_pre_upload_total",
			Help: "Answers of the pre-upload hook, by outcome: accepted, refused (a 4xx), failed (any other answer), unavailable (none in time).",
		}, []string{"outcome"}),
	}
	for _, s := range []string{"queued", "delivered", "failed", "parked", "dropped", "lost"} {
		h.events.WithLabelValues(s)
	}
	for _, o := range []string{"accepted", "refused", "failed", "unavailable"} {
		h.admits.WithLabelValues(o)
	}
	reg.MustRegister(h.events, h.outbox, h.dead, h.admits)
	return h
}

// HookEvent implements hooks.Observer.
func (m *Metrics) HookEvent(stage string) { m.hooks.events.WithLabelValues(stage).Inc() }

// HookOutbox implements hooks.Observer.
func (m *Metrics) HookOutbox(depth int) { m.hooks.outbox.Set(float64(depth)) }

// HookDead implements hooks.Observer.
func (m *Metrics) HookDead(n int) { m.hooks.dead.Set(float64(n)) }

// HookAdmit implements hooks.Observer.
func (m *Metrics) HookAdmit(outcome string) { m.hooks.admits.WithLabelValues(outcome).Inc() }
