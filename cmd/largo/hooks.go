package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
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
	maxEvents  int
	maxBytes   sizeValue
	maxAge     time.Duration
}

// on reports whether any hook is asked for.
func (c *hookConfig) on() bool { return c.preUpload != "" || c.notify != "" }

// minSecret is the shortest secret --hook-secret-file may hold.
const minSecret = 16

func addHookFlags(f *pflag.FlagSet, c *hookConfig) {
	f.StringVar(&c.preUpload, "hook-pre-upload", "", "URL asked (a POST of JSON) before every upload is accepted, whatever its protocol: a 2xx accepts it (with metadata), a 4xx refuses it with that status and message (see docs/hooks.md)")
	f.StringVar(&c.notify, "hook-notify", "", "URL sent a POST of JSON for every file committed, deleted, moved or expired, from a durable outbox in the store's state area, until it answers a 2xx")
	f.StringVar(&c.secretFile, "hook-secret-file", "", "file holding the secret (16 bytes or more, or whsec_ and its base64) that signs every hook request as Standard Webhooks do (webhook-id, webhook-timestamp, webhook-signature: HMAC-SHA256 of the id, time and body), and, for one release, in the deprecated Largo-Signature field (default: unsigned)")
	durationVar(f, &c.timeout, "hook-timeout", hooks.DefaultTimeout, "how long the pre-upload hook may take to answer (then the upload is refused with 503, unless --hook-fail-open), and each delivery of a notification")
	f.BoolVar(&c.failOpen, "hook-fail-open", false, "accept uploads when the pre-upload hook gives no answer in time, instead of refusing them with 503")
	durationVar(f, &c.retryMax, "hook-retry-max", hooks.DefaultMaxBackoff, "longest wait between two attempts to deliver a notification (a random wait below a ceiling that doubles from one second up to it)")
	f.IntVar(&c.maxEvents, "hook-outbox-max-events", hooks.DefaultMaxEvents, "most notifications the outbox holds, its dead letters included: past it, new events are dropped (counted in largo_hook_events_total{stage=\"dropped\"} and logged), the writes go ahead")
	c.maxBytes = hooks.DefaultMaxBytes
	f.Var(&c.maxBytes, "hook-outbox-max-bytes", "most bytes of notifications the outbox holds, its dead letters included: past it, new events are dropped as past --hook-outbox-max-events")
	durationVar(f, &c.maxAge, "hook-max-age", 0, "park a notification the receiver still fails (a 5xx, 408 or 429) once it is this old, as a dead letter (largo hooks dead), so that the next ones flow (default 0: try it for ever; one refused with another 4xx is parked after 5 tries, one that gets no answer never)")
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
	if c.maxEvents <= 0 || c.maxBytes <= 0 {
		return nil, usageErr(errors.New("--hook-outbox-max-events, --hook-outbox-max-bytes: give a positive bound"))
	}
	if c.maxAge < 0 {
		return nil, usageErr(errors.New("--hook-max-age: give a duration, or 0"))
	}
	cfg := hooks.Config{
		PreUpload:  c.preUpload,
		Notify:     c.notify,
		Timeout:    c.timeout,
		FailOpen:   c.failOpen,
		MaxBackoff: c.retryMax,
		MaxEvents:  c.maxEvents,
		MaxBytes:   int64(c.maxBytes),
		MaxAge:     c.maxAge,
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

// deadConfig is what largo hooks dead, retry and drop are told.
type deadConfig struct {
	where serveConfig // the folder or bucket, as openStore reads it
	json  bool
	ids   []string
	all   bool
}

func newHooksCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "List the notifications parked as dead letters, send them again or drop them",
		Long: `The notifications of largo serve --hook-notify leave from an outbox in the
served folder's or bucket's state area. One the receiver keeps refusing
(a 4xx, 5 times) is parked there as a dead letter, so that the next ones
flow; so is one still failing past --hook-max-age. These commands work on
the state area directly, beside the running servers or without them:
"dead" lists the dead letters, "retry" puts them back at the head of the
outbox (the server that sends picks them up within 5 seconds), "drop"
removes them for good. Dead letters count toward the outbox's bound
(--hook-outbox-max-events, --hook-outbox-max-bytes) until retried or
dropped.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newHooksDead(e), newHooksChange(e, "retry"), newHooksChange(e, "drop"))
	return cmd
}

// deadStore takes the folder DIR of args into cfg, which --store must
// not name too.
func deadStore(cfg *deadConfig, args []string) error {
	if len(args) == 1 {
		if cfg.where.store != "" {
			return usageErr(errors.New("give a folder or --store ($LARGO_STORE), not both"))
		}
		cfg.where.dir = args[0]
	}
	return nil
}

func newHooksDead(e *env) *cobra.Command {
	cfg := &deadConfig{}
	cmd := &cobra.Command{
		Use:   "dead [DIR] [--store s3://BUCKET/PREFIX]",
		Short: "List the notifications parked as dead letters",
		Long: `List the notifications parked as dead letters in the outbox of a served
folder (DIR, default the current folder) or bucket (--store), oldest event
first: each one's id (as receivers see it, and as retry and drop take it),
type, file name, when it was queued and parked, the receiver's last
status, the attempts made and why it was parked.

--json prints [{"id", "type", "name", "time", "parked", "status", "reason",
"tries", "body"}], body being the notification as it is sent.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := deadStore(cfg, args); err != nil {
				return err
			}
			return runHooksDead(cmd.Context(), e, cfg)
		},
	}
	f := cmd.Flags()
	addStoreFlags(f, &cfg.where, "the bucket (s3://BUCKET/PREFIX) or folder whose dead letters to list (default: the DIR argument, else the current folder)")
	f.BoolVar(&cfg.json, "json", false, "print JSON")
	documentEnv(f)
	return cmd
}

func newHooksChange(e *env, verb string) *cobra.Command {
	cfg := &deadConfig{}
	short, long := "Send dead letters again: put them back at the head of the outbox", `Put the dead letters with the ids given (--id, as largo hooks dead lists
them), or all of them (--all), back into the outbox of a served folder
(DIR, default the current folder) or bucket (--store), where each keeps
its place by the time it was queued: the server that sends picks them up
within 5 seconds and sends them before the events queued after them, with
their ids and bodies unchanged.`
	if verb == "drop" {
		short, long = "Remove dead letters for good", `Remove the dead letters with the ids given (--id, as largo hooks dead lists
them), or all of them (--all), from a served folder (DIR, default the
current folder) or bucket (--store), for good: they are never sent, and
no longer count toward the outbox's bound.`
	}
	cmd := &cobra.Command{
		Use:   verb + " [DIR] [--store s3://BUCKET/PREFIX] (--id ID... | --all)",
		Short: short,
		Long:  long,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := deadStore(cfg, args); err != nil {
				return err
			}
			if (len(cfg.ids) > 0) == cfg.all {
				return usageErr(errors.New("give --id ID (one or more) or --all"))
			}
			return runHooksChange(cmd.Context(), e, cfg, verb)
		},
	}
	f := cmd.Flags()
	addStoreFlags(f, &cfg.where, "the bucket (s3://BUCKET/PREFIX) or folder of the dead letters (default: the DIR argument, else the current folder)")
	f.StringSliceVar(&cfg.ids, "id", nil, "the id of a dead letter, as largo hooks dead lists it; repeat or separate with commas for several")
	f.BoolVar(&cfg.all, "all", false, "every dead letter")
	documentEnv(f)
	return cmd
}

// openDead opens the store cfg names and returns its dead letters, the
// store as the user is told of it, a context done at a signal, and what
// closes them.
func openDead(ctx context.Context, e *env, cfg *deadConfig) (*hooks.DeadLetters, string, context.Context, func(), error) {
	st, where, err := openStore(ctx, e, &cfg.where)
	if err != nil {
		return nil, "", nil, nil, err
	}
	sk, ok := st.(largo.StateKeeper)
	if !ok {
		st.Close()
		return nil, "", nil, nil, usageErr(fmt.Errorf("%s keeps no state: it has no outbox", where))
	}
	ctx, stop := untilSignal(ctx, e)
	return hooks.NewDeadLetters(sk.State()), where, ctx, func() { stop(); st.Close() }, nil
}

// runHooksDead prints the dead letters of the store cfg names.
func runHooksDead(ctx context.Context, e *env, cfg *deadConfig) error {
	dl, where, ctx, done, err := openDead(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer done()
	var enc *json.Encoder
	var tw *tabwriter.Writer
	if cfg.json {
		// A stream of objects in one array, printed as they are read.
		fmt.Fprint(e.stdout, "[")
		enc = json.NewEncoder(e.stdout)
	} else {
		tw = tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tNAME\tQUEUED\tPARKED\tSTATUS\tTRIES\tREASON")
	}
	n := 0
	var bad []error
	err = dl.Each(ctx, func(d hooks.DeadLetter, err error) bool {
		if err != nil {
			bad = append(bad, err)
			return true
		}
		if enc != nil {
			if n > 0 {
				fmt.Fprint(e.stdout, ",")
			}
			enc.Encode(d)
		} else {
			status := "-"
			if d.Status != 0 {
				status = fmt.Sprint(d.Status)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.Type, d.Name, d.Time.Format(time.RFC3339), d.Parked.UTC().Format(time.RFC3339), status, d.Tries, d.Reason)
		}
		n++
		return true
	})
	if enc != nil {
		fmt.Fprintln(e.stdout, "]")
	} else {
		tw.Flush()
	}
	for _, b := range bad {
		fmt.Fprintf(e.stderr, "largo: %v\n", b)
	}
	if err != nil {
		return failed(fmt.Errorf("dead letters of %s: %v", where, pathErrText(err)))
	}
	return nil
}

// runHooksChange retries or drops dead letters of the store cfg names.
func runHooksChange(ctx context.Context, e *env, cfg *deadConfig, verb string) error {
	dl, where, ctx, done, err := openDead(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer done()
	change, what := dl.Retry, "put back into the outbox"
	if verb == "drop" {
		change, what = dl.Drop, "dropped"
	}
	n, err := change(ctx, cfg.ids, cfg.all)
	fmt.Fprintf(e.stdout, "%d dead letters %s\n", n, what)
	switch {
	case errors.Is(err, hooks.ErrNoDeadLetter):
		return usageErr(err)
	case err != nil:
		return failed(fmt.Errorf("dead letters of %s: %v", where, pathErrText(err)))
	}
	return nil
}
