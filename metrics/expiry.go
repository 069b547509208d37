package metrics

// Expired counts the files the expiry sweep removed (package expiry), by
// why they expired. It is safe for concurrent use.
type Expired struct {
	removed *vec
}

// Expired makes the expiry's counters and adds them to the metrics; call
// it once.
func (m *Metrics) Expired() *Expired {
	e := &Expired{removed: newVec("largo_expired_files_total", "Files removed because their time was up, by why: rule (an access file's [[expire]]) or link (a drop box's file TTL).", kindCounter, "why")}
	for _, why := range []string{"rule", "link"} {
		e.removed.with(why)
	}
	m.reg.add(e.removed.source)
	return e
}

// Expired implements expiry.Observer.
func (e *Expired) Expired(why string) { e.removed.with(why).Inc() }
