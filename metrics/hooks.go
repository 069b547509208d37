package metrics

// hookMetrics are the metrics of the hooks (package hooks).
type hookMetrics struct {
	events *vec
	outbox *value
	dead   *value
	admits *vec
}

func newHookMetrics(reg *registry) hookMetrics {
	h := hookMetrics{
		events: newVec("largo_hook_events_total", "Notifications, by stage: queued in the outbox, delivered (a 2xx), failed (one attempt that got none), parked (made a dead letter: refused too often, or failing past the outbox's age), dropped (not queued: the outbox was full), lost (could not be queued).", kindCounter, "stage"),
		outbox: new(value),
		dead:   new(value),
		admits: newVec("largo_hook_pre_upload_total", "Answers of the pre-upload hook, by outcome: accepted, refused (a 4xx), failed (any other answer), unavailable (none in time).", kindCounter, "outcome"),
	}
	for _, s := range []string{"queued", "delivered", "failed", "parked", "dropped", "lost"} {
		h.events.with(s)
	}
	for _, o := range []string{"accepted", "refused", "failed", "unavailable"} {
		h.admits.with(o)
	}
	reg.add(h.events.source, h.admits.source,
		single("largo_hook_outbox_depth", "Notifications waiting in the outbox, as this server's sender last saw it.", kindGauge, h.outbox),
		single("largo_hook_dead_letters", "Notifications parked as dead letters (largo hooks dead), as this server last counted them.", kindGauge, h.dead),
	)
	return h
}

// HookEvent implements hooks.Observer.
func (m *Metrics) HookEvent(stage string) { m.hooks.events.with(stage).Inc() }

// HookOutbox implements hooks.Observer.
func (m *Metrics) HookOutbox(depth int) { m.hooks.outbox.Set(float64(depth)) }

// HookDead implements hooks.Observer.
func (m *Metrics) HookDead(n int) { m.hooks.dead.Set(float64(n)) }

// HookAdmit implements hooks.Observer.
func (m *Metrics) HookAdmit(outcome string) { m.hooks.admits.with(outcome).Inc() }
