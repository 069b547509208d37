package serve

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"largo"
	"largo/auth"
	"largo/wire"
)

// MetricsPath is where Config.Metrics is served on the server's own
// listener.
const MetricsPath = Prefix + "metrics"

// metricsRefusal is the reason a request for the metrics is refused: they
// name users and private paths with their usage, and are the operator's.
const metricsRefusal = "metrics are the operator's: read them on the admin listener (--admin-listen), or as a user an access-file rule for /_largo/metrics names"

// metrics answers MetricsPath. The metrics are the operator's: they are
// read on the admin listener, which serves them to whoever reaches it,
// and here only by the principals that a rule whose path is
// /_largo/metrics names with read (a rule on "/" does not reach it: see
// gate.Gate.CheckRoute). Anyone else is refused, 401 when anonymous (who
// may sign in), 403 otherwise.
func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) error {
	if err := h.gate.CheckRoute(r.Context(), auth.Read, strings.TrimPrefix(MetricsPath, "/")); err != nil {
		code := http.StatusForbidden
		if errors.Is(err, largo.ErrUnauthorized) {
			code = http.StatusUnauthorized
		}
		return fmt.Errorf("%w: %w", wire.Refuse(code, metricsRefusal), err)
	}
	h.cfg.Metrics.ServeHTTP(w, r)
	return nil
}
