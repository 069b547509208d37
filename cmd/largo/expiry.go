package main

import (
	"log/slog"

	"largo"
	"largo/expiry"
	"largo/gate"
	"largo/metrics"
)

// newExpiry makes the expiry of files (the access file's [[expire]]
// tables, drop boxes' file TTLs), which the listings show and a worker
// of the server sweeps.
func newExpiry(logger *slog.Logger, st largo.Store, g *gate.Gate, m *metrics.Metrics) *expiry.Expiry {
	ecfg := expiry.Config{Access: g.Access(), Gate: g, Logger: logger, Observer: m.Expired()}
	if sk, ok := st.(largo.StateKeeper); ok {
		ecfg.State = sk.State()
	}
	return expiry.New(ecfg)
}
