package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/record"
	"largo/s3"
)

// engineDoc is where the engines' differences, and the ways out, are
// told.
const engineDoc = "docs/buckets.md#engines"

// engineFlags are the flags that fit writes to what an S3 server takes.
type engineFlags struct {
	instances choiceValue
	checksum  choiceValue
}

// addEngineFlags registers on f the flags of writes to a bucket that
// depend on its server, into e.
func addEngineFlags(f *pflag.FlagSet, e *engineFlags) {
	e.instances = choiceValue{value: "auto", choices: []string{"auto", "many", "one"}}
	e.checksum = choiceValue{value: "auto", choices: []string{"auto", "trailer", "off"}}
	f.Var(&e.instances, "s3-instances", "how many largo instances may write to the bucket: auto (several where the S3 server applies If-None-Match and If-Match to writes, even under concurrent requests, as probed at start-up; else one), many (refuse to start where it does not), or one (this instance only: its conditional writes are checked in this process, and another instance that writes to the bucket is refused while it runs)")
	f.Var(&e.checksum, "s3-checksum", "how a body streamed to the bucket is guarded: auto (a CRC32 checksum trailer where the S3 server takes one, as probed at start-up; else none), trailer (refuse to start where it does not), or off (none: such a body goes as the part of a multipart upload, which a body cut short cannot complete)")
}

// config returns the store's settings of e.
func (e *engineFlags) config() (s3.Instances, s3.Checksum) {
	inst := map[string]s3.Instances{"auto": s3.InstancesAuto, "many": s3.InstancesMany, "one": s3.InstancesOne}[e.instances.value]
	sum := map[string]s3.Checksum{"auto": s3.ChecksumAuto, "trailer": s3.ChecksumTrailer, "off": s3.ChecksumOff}[e.checksum.value]
	return inst, sum
}

// engineReporter is a store that tells what it found of its server's
// ways with writes (s3.Store, after PrepareWrites).
type engineReporter interface{ Engine() s3.Engine }

// prepareErr words a failure of PrepareWrites, with the way out where the
// server lacks what a flag asked for.
func prepareErr(what string, err error) error {
	switch {
	case errors.Is(err, s3.ErrNotShared):
		return usageErr(fmt.Errorf("%s: %v: run a single instance with --s3-instances one (see %s)", what, err, engineDoc))
	case errors.Is(err, s3.ErrNoTrailer):
		return usageErr(fmt.Errorf("%s: %v: use --s3-checksum auto or off (see %s)", what, err, engineDoc))
	}
	return usageErr(fmt.Errorf("%s: %v", what, pathErrText(err)))
}

// logEngine says, once at start-up, what the store does differently for
// its server: one instance only, and why; no checksum trailer.
func logEngine(logger *slog.Logger, st largo.Store) {
	r, ok := st.(engineReporter)
	if !ok {
		return
	}
	e := r.Engine()
	switch {
	case !e.Shared && len(e.Gaps) > 0:
		logger.Warn("one instance only: the S3 server "+strings.Join(e.Gaps, ", ")+"; conditional writes are checked in this process, and another instance writing to this bucket is refused", "see", engineDoc)
	case !e.Shared:
		logger.Info("one instance only (--s3-instances one): conditional writes are checked in this process, and another instance writing to this bucket is refused", "see", engineDoc)
	}
	if !e.Trailers {
		logger.Info("streamed bodies go to the bucket without a checksum trailer, each as the part of a multipart upload", "see", engineDoc)
	}
}

// instanceLease is the state key of the lease that keeps a bucket whose
// server lacks conditional writes to one writing instance, and
// instanceTTL its life: renewed every quarter of it while the instance
// runs; one that stopped without giving it up holds it that long (less
// on the same machine, where a process that is gone is seen at once).
const (
	instanceLease = "instance"
	instanceTTL   = 30 * time.Second
)

// holdAlone takes, on a store that keeps its bucket to one instance, the
// lease that refuses another: nil when the store is shared; an error
// naming the holder when another instance writes to the bucket.
func holdAlone(ctx context.Context, st largo.Store, where string) (*record.Lease, error) {
	r, ok := st.(engineReporter)
	sk, keeps := st.(largo.StateKeeper)
	if !ok || !keeps || r.Engine().Shared {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	rs := record.New(sk.State(), record.Options{})
	l, err := rs.Acquire(ctx, instanceLease, instanceTTL)
	if err == nil {
		// Another that wrote its lease at the same moment is found now,
		// not at the first renewal.
		err = l.Renew(ctx)
	}
	switch {
	case errors.Is(err, record.ErrHeld), errors.Is(err, record.ErrLost):
		return nil, usageErr(fmt.Errorf("%s is written by another largo instance (%v), and its S3 server keeps a bucket to one instance: stop that one first (see %s)", where, err, engineDoc))
	case err != nil:
		return nil, usageErr(fmt.Errorf("%s: taking the lease of the only instance: %v", where, err))
	}
	return l, nil
}

// keepAlone renews l until ctx is done, then gives it up; a lease no
// longer held meanwhile (renewals that failed, or another instance that
// took it) is logged.
func keepAlone(ctx context.Context, logger *slog.Logger, l *record.Lease) {
	l.Keep(ctx)
	t := time.NewTicker(instanceTTL / 4)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			l.Release(rctx)
			return
		case <-t.C:
			if !l.Holding() && !warned {
				warned = true
				logger.Error("the lease that keeps the bucket to this instance is no longer held (its renewals failed, or another instance took it): another instance may be writing to it", "see", engineDoc)
			}
		}
	}
}
