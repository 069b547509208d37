package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/hooks"
	"largo/metrics"
)

// hookConfig is what serve is told of the hooks.
type hookConfig struct {
	preUpload  string
	notify     string
	secretFile string
	timeout    time.Duration
	failOpen   bool
	retryMax   time.Duration
}

// on reports whether any hook is asked for.
func (c *hookConfig) on() bool { return c.preUpload != "" || c.notify != "" }

// minSecret is the shortest secret --hook-secret-file may hold.
const minSecret = 16

func addHookFlags(f *pflag.FlagSet, c *hookConfig) {
	f.StringVar(&c.preUpload, "hook-pre-upload", "", "URL asked (a POST of JSON) before every upload is accepted, whatever its protocol: a 2xx accepts it (with metadata), a 4xx refuses it with that status and message (see docs/hooks.md)")
	f.StringVar(&c.notify, "hook-notify", "", "URL sent a POST of JSON for every file committed, deleted, moved or expired, from a durable outbox in the store's state area, until it answers a 2xx")
	f.StringVar(&c.secretFile, "hook-secret-file", "", "file holding the secret (16 bytes or more) that signs every hook request with HMAC-SHA256 in the Largo-Signature field (default: unsigned)")
	durationVar(f, &c.timeout, "hook-timeout", hooks.DefaultTimeout, "how long the pre-upload hook may take to answer (then the upload is refused with 503, unless --hook-fail-open), and each delivery of a notification")
	f.BoolVar(&c.failOpen, "hook-fail-open", false, "accept uploads when the pre-upload hook gives no answer in time, instead of refusing them with 503")
	durationVar(f, &c.retryMax, "hook-retry-max", hooks.DefaultMaxBackoff, "longest wait between two attempts to deliver a notification (the wait doubles from one second up to it)")
}

// newHooks returns the hooks the flags ask for; nil without
// --hook-pre-upload and --hook-notify. Run sends the notifications, and
// Close gives up the outbox's lease.
func newHooks(logger *slog.Logger, c *hookConfig, st largo.Store, m *metrics.Metrics) (*hooks.Hooks, error) {
	if !c.on() {
		if c.secretFile != "" {
			return nil, usageErr(errors.New("--hook-secret-file: give --hook-pre-upload or --hook-notify"))
		}
		return nil, nil
	}
	cfg := hooks.Config{
		PreUpload:  c.preUpload,
		Notify:     c.notify,
		Timeout:    c.timeout,
		FailOpen:   c.failOpen,
		MaxBackoff: c.retryMax,
		Logger:     logger,
		Observer:   m,
	}
	if c.secretFile != "" {
		b, err := os.ReadFile(c.secretFile)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--hook-secret-file: %v", pathErrText(err)))
		}
		if cfg.Secret = bytes.TrimSpace(b); len(cfg.Secret) < minSecret {
			return nil, usageErr(fmt.Errorf("--hook-secret-file: at least %d bytes", minSecret))
		}
	}
	if sk, ok := st.(largo.StateKeeper); ok {
		cfg.State = sk.State()
	}
	h, err := hooks.New(cfg)
	if err != nil {
		return nil, usageErr(err)
	}
	return h, nil
}
