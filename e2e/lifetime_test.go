//go:build e2e

package e2e

import (
	"syscall"
	"testing"
	"time"
)

// A server stopped within the quota's sync period still records the
// usage it counted: the stop waits for the quota's last sync, on a folder
// and a bucket, whichever signal stops it; and a restart holds the next
// write to what was counted before.

const stopQuotaAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1000"

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`

func TestStopKeepsUsage(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, g *target) {
				access := writeAccessFile(t, stopQuotaAccess)
				// A sync period far longer than the test: only the stop
				// can record the usage.
				args := []string{"--access", access, "--quota-sync", "1h", "--quota-reconcile", "0"}
				s := startServerOn(t, g, args...)
				if code := putAs(t, s, "alice", "one", 600); code != 201 {
					t.Fatalf("alice's first 600 bytes: %d", code)
				}
				s.signal(sig)
				if code := s.wait(30 * time.Second); code != 0 {
					t.Fatalf("exit code %d after %s; want 0", code, sig)
				}
				want := [2]int64{600, 1}
				if got := quotaUsage(t, g, access, false)["user alice"]; got != want {
					t.Errorf("largo usage after %s: alice %v; want %v (bytes, files)", sig, got, want)
				}

				s = startServerOn(t, g, args...)
				if code := putAs(t, s, "alice", "two", 600); code != 507 {
					t.Errorf("after a restart, alice's second 600 bytes under a quota of 1000: %d; want 507", code)
				}
			})
		})
	}
}
