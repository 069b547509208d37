package main

import (
	"context"
	"log/slog"

	"largo"
	"largo/gate"
	"largo/record"
)

// recordsOf returns the records of files of st (package record: one per
// file), nil for a store without a state area.
func recordsOf(st largo.Store) *record.Files {
	sk, ok := st.(largo.StateKeeper)
	if !ok {
		return nil
	}
	return record.NewFiles(record.New(sk.State(), record.Options{}), record.FilesOptions{})
}

// migrateRecords reads the records an earlier release kept of files into
// files' one record per file, once per store; a file asked for meanwhile
// is read from the old records on the way.
func migrateRecords(ctx context.Context, logger *slog.Logger, files *record.Files) {
	if files == nil {
		return
	}
	if _, err := files.Migrate(ctx, logger); err != nil && ctx.Err() == nil {
		logger.Warn("migrating the records of files", "err", err)
	}
}

// asServer is the context of the server's own calls through the gate.
func asServer(ctx context.Context) context.Context { return gate.With(ctx, gate.Server()) }
