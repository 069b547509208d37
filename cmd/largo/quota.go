package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/metrics"
	"largo/quota"
	"largo/record"
)

// quotaConfig is what largo serve and largo usage are told of quotas
// besides the access file's.
type quotaConfig struct {
	perUser      sizeValue
	filesPerUser int64
	sync         time.Duration
	reconcile    time.Duration
}

// Defaults of the quotas' background work.
const (
	defaultQuotaSync      = 5 * time.Second
	defaultQuotaReconcile = time.Hour
)

// addQuotaFlags registers the flags of quotas; with serving, those of
// the server's background work too.
func addQuotaFlags(f *pflag.FlagSet, q *quotaConfig, serving bool) {
	f.Var(&q.perUser, "quota-per-user", "most bytes the files each signed-in user owns (wrote, or received through their share links) may hold, unless the access file gives the user a quota (default 0: none)")
	f.Int64Var(&q.filesPerUser, "quota-files-per-user", 0, "most files each signed-in user may own, unless the access file gives the user a quota (default 0: none)")
	if !serving {
		return
	}
	durationVar(f, &q.sync, "quota-sync", defaultQuotaSync, "how often the usage counted against quotas is added to the store's record, which instances serving one bucket share: a quota may be overrun by what other instances admit in this time")
	durationVar(f, &q.reconcile, "quota-reconcile", defaultQuotaReconcile, "how often the usage is counted again from the files themselves, to see changes made behind largo's back (0: only at start-up when none is recorded, and after changes only a count sees)")
}

// perUser is the quota of users the flags give.
func (q *quotaConfig) perUserQuota() auth.Quota {
	return auth.Quota{Bytes: int64(q.perUser), Files: q.filesPerUser}
}

// newQuota returns the keeper of the quotas when the access file or the
// flags give any, nil otherwise, with the usage recorded read, so that
// the first writes are admitted against it; the metrics export it. Run
// keeps it, and Close records the last changes.
func newQuota(ctx context.Context, logger *slog.Logger, cfg *serveConfig, st largo.Store, files *record.Files, g *gate.Gate, m *metrics.Metrics) (*quota.Keeper, error) {
	q := &cfg.quota
	access := g.Access()
	if !q.perUserQuota().Limited() && !access.Policy().HasQuotas() {
		return nil, nil
	}
	sk, ok := st.(largo.StateKeeper)
	switch {
	case !ok:
		return nil, usageErr(errors.New("quotas: this store keeps no state to count usage in"))
	case q.sync <= 0:
		return nil, usageErr(errors.New("--quota-sync: give a positive duration"))
	case q.reconcile < 0:
		return nil, usageErr(errors.New("--quota-reconcile: give a duration, or 0"))
	}
	qc := quota.Config{
		Store:   st,
		State:   sk.State(),
		Files:   files,
		Policy:  func() quota.Policy { return access.Policy() },
		PerUser: q.perUserQuota(),
		Logger:  logger,
	}
	if g.Links() != nil {
		qc.Maker = func(ctx context.Context) string {
			if l := g.LinkOf(ctx); l != nil {
				return l.Maker
			}
			return ""
		}
	}
	k := quota.New(qc)
	lctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	if _, err := k.Load(lctx); err != nil {
		logger.Warn("quota: reading the usage", "err", err) // read again as it runs
	}
	m.WatchQuotas(func() []metrics.QuotaLine { return quotaLines(k.Report()) })
	logger.Info("quotas on", "per_user", largo.FormatSize(int64(q.perUser)), "files_per_user", q.filesPerUser, "sync", q.sync, "reconcile", q.reconcile)
	return k, nil
}

// quotaLines is what the metrics export of a usage report.
func quotaLines(report []quota.Line) []metrics.QuotaLine {
	out := make([]metrics.QuotaLine, 0, len(report))
	for _, l := range report {
		name := "path:/" + l.Path
		if l.User != "" {
			name = "user:" + l.User
		}
		out = append(out, metrics.QuotaLine{Quota: name, UsedBytes: l.Used.Bytes, UsedFiles: l.Used.Files, LimitBytes: l.Limit.Bytes, LimitFiles: l.Limit.Files})
	}
	return out
}

// usageConfig is everything `largo usage` is told.
type usageConfig struct {
	where     serveConfig // the folder or bucket, as openStore reads it
	access    string
	quota     quotaConfig
	reconcile bool
	json      bool
}

func newUsage(e *env) *cobra.Command {
	cfg := &usageConfig{}
	cmd := &cobra.Command{
		Use:   "usage [DIR] [--store s3://BUCKET/PREFIX]",
		Short: "Print the usage counted against quotas, per user and per path",
		Long: `Print the usage of a served folder (DIR, default the current folder) or
bucket (--store) that largo serve counts against its quotas: for each path
with a quota (the access file's [[quota]] tables), the bytes and files under
it; for each user, the bytes and files they own (the files they wrote, or
that came through their share links, while unchanged since), beside their
quota. The usage is read from the store's state area, where every instance
serving the store adds to it.

With --reconcile, the usage is first counted again from the files
themselves (the server does so at start-up when none is recorded, and every
--quota-reconcile): files changed, added or removed behind largo's back are
then counted as they are. Give the access file (--access) to see the limits
and to count its paths.

--json prints {"reconciled": TIME, "quotas": [{"quota": "/PATH" or "user
NAME", "path" or "user", "used": {"bytes", "files"}, "limit": {"bytes",
"files"}}]}; a limit of 0 is none.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cfg.where.store != "" {
					return usageErr(errors.New("give a folder or --store ($LARGO_STORE), not both"))
				}
				cfg.where.dir = args[0]
			}
			return runUsage(cmd.Context(), e, cfg)
		},
	}
	f := cmd.Flags()
	addStoreFlags(f, &cfg.where, "the bucket (s3://BUCKET/PREFIX) or folder whose usage to print (default: the DIR argument, else the current folder)")
	f.StringVar(&cfg.access, "access", "", "the server's access file, for its quotas")
	addQuotaFlags(f, &cfg.quota, false)
	f.BoolVar(&cfg.reconcile, "reconcile", false, "count everything again from the files first, and record it")
	f.BoolVar(&cfg.json, "json", false, "print JSON")
	documentEnv(f)
	return cmd
}

// runUsage prints the usage of the store cfg names.
func runUsage(ctx context.Context, e *env, cfg *usageConfig) error {
	pol := auth.OneUser("", false)
	if cfg.access != "" {
		var err error
		if pol, err = auth.LoadFile(cfg.access); err != nil {
			return usageErr(err)
		}
	}
	st, where, err := openStore(ctx, e, &cfg.where)
	if err != nil {
		return err
	}
	defer st.Close()
	sk, ok := st.(largo.StateKeeper)
	if !ok {
		return usageErr(fmt.Errorf("%s keeps no state to count usage in", where))
	}
	ctx, stop := untilSignal(ctx, e)
	defer stop()
	files := recordsOf(st)
	migrateRecords(ctx, slog.New(slog.DiscardHandler), files)
	k := quota.New(quota.Config{Store: st, State: sk.State(), Files: files, Policy: func() quota.Policy { return pol }, PerUser: cfg.quota.perUserQuota()})
	if cfg.reconcile {
		_, err = k.Reconcile(ctx)
	} else {
		_, err = k.Load(ctx)
	}
	if err != nil {
		return failed(fmt.Errorf("usage of %s: %v", where, pathErrText(err)))
	}
	report := k.Report()
	if cfg.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		type line struct {
			Quota string `json:"quota"`
			quota.Line
		}
		out := struct {
			Reconciled time.Time `json:"reconciled,omitzero"`
			Quotas     []line    `json:"quotas"`
		}{k.Reconciled(), []line{}}
		for _, l := range report {
			out.Quotas = append(out.Quotas, line{l.Name(), l})
		}
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "QUOTA\tBYTES\tLIMIT\tFILES\tLIMIT")
	for _, l := range report {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", l.Name(), largo.FormatSize(l.Used.Bytes), limitText(l.Limit.Bytes, true), l.Used.Files, limitText(l.Limit.Files, false))
	}
	tw.Flush()
	if r := k.Reconciled(); !r.IsZero() {
		fmt.Fprintf(e.stdout, "counted from the files at %s\n", r.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(e.stdout, "never counted from the files: run with --reconcile")
	}
	return nil
}

// limitText writes a limit, "-" for none.
func limitText(n int64, bytes bool) string {
	switch {
	case n <= 0:
		return "-"
	case bytes:
		return largo.FormatSize(n)
	}
	return fmt.Sprint(n)
}
