package transfer

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
)

// Outcome is how a transfer ended.
type Outcome string

// The outcomes, as they appear in logs and metric labels.
const (
	Complete Outcome = "complete" // every byte was sent
	Aborted  Outcome = "aborted"  // the client went away
	Timeout  Outcome = "timeout"  // the client stalled past the idle timeout or stayed below the minimum rate
	Error    Outcome = "error"    // the server failed, or the source ended early
	Rejected Outcome = "rejected" // the server refused the transfer: a limit, a digest, a condition
)

// Outcomes lists every Outcome, for metrics that want a series per outcome
// from the start.
var Outcomes = []Outcome{Complete, Aborted, Timeout, Error, Rejected}

// Classify maps a write error to the outcome it means.
func Classify(err error) Outcome {
	var ne net.Error
	switch {
	case err == nil:
		return Complete
	case errors.Is(err, ErrTooSlow), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, context.Canceled), errors.Is(err, net.ErrClosed):
		return Aborted
	}
	// Any other failure to write is the connection failing under us, which
	// from the server's side is the client being gone.
	return Aborted
}
