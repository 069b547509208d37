package main

import (
	"context"
	"log/slog"

	"largo"
	"largo/expiry"
	"largo/gate"
	"largo/ingest"
	"largo/metrics"
	"largo/serve"
)

// newExpiry makes the expiry of files (the access file's [[expire]]
// tables, drop boxes' file TTLs), which the listings show.
func newExpiry(logger *slog.Logger, st largo.Store, g *gate.Gate, m *metrics.Metrics, hcfg *serve.Config) *expiry.Expiry {
	ecfg := expiry.Config{Access: g.Access(), Gate: g, Logger: logger, Observer: m.Expired()}
	if sk, ok := st.(largo.StateKeeper); ok {
		ecfg.State = sk.State()
	}
	exp := expiry.New(ecfg)
	hcfg.Expiry = exp
	return exp
}

// sweepExpired removes expired files through writes every period, until
// ctx is done.
func sweepExpired(ctx context.Context, logger *slog.Logger, cfg *serveConfig, exp *expiry.Expiry, writes *ingest.Pipeline) {
	go every(ctx, logger, cfg.expirySweep, "expired files", func(ctx context.Context) (int, error) {
		return exp.Sweep(ctx, writes)
	})
}
