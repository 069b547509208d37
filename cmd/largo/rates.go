package main

import (
	"time"

	"largo/metrics"
	"largo/pace"
)

// rateFlags are the defaults of the bandwidth caps: --rate,
// --rate-per-user, --rate-per-address and --rate-per-link.
type rateFlags struct {
	transfer, user, address, link sizeValue
}

// limits returns the caps' shared buckets, reporting the time transfers
// wait to m. They are made even when no flag sets a default: the access
// file may give a user a rate of its own, and a link may carry one.
func (f *rateFlags) limits(m *metrics.Metrics) *pace.Limits {
	for _, k := range pace.Kinds {
		m.Throttled(k.String(), 0) // every kind's series from the start
	}
	return pace.New(pace.Config{
		Transfer:  int64(f.transfer),
		User:      int64(f.user),
		Address:   int64(f.address),
		Link:      int64(f.link),
		Throttled: func(k pace.Kind, d time.Duration) { m.Throttled(k.String(), d) },
	})
}
