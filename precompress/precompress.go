// Package precompress writes precompressed sidecars for the compressible
// files of a store: NAME.zst, NAME.br and NAME.gz beside NAME, at the
// codings' best levels (encode.Max) unless told otherwise, for the server
// to send as they are (with sendfile, from a folder) instead of compressing
// on every request. The store is a folder or a bucket alike: the files are
// read through largo.Store, and the sidecars written through the write
// pipeline (package ingest), like every other write.
//
// Prepare walks the store and makes a Plan; Run carries it out. The walk
// leaves out what the server never serves (hidden names, which stores do
// not list, and names under the reserved prefix), symbolic links (a linked
// folder is not descended into) and existing sidecars (a name with a
// coding's extension whose base file is there). A file of encode.MinSize
// or more is compressed when the compression policy would compress it,
// by its media type as the server decides it (the store's, then its
// name's, then its first 512 bytes), unless its sidecars are all fresh:
// recorded as made from the file as it is now (package sidecar), or with
// Config.AnySidecars none older than the file. Run compresses one coding
// per task, on as many workers as there are cores.
//
// Every sidecar written is recorded (its record, record.File, in the
// store's state area, says its version and the version of the original
// it was made from, and the original's record names it), for the server
// to tell it from a file someone put there under the same name (an uploaded data.csv.gz beside
// data.csv). A file under a sidecar's name that is not recorded is never
// written over nor removed, unless Config.AnySidecars: it is reported
// (Event.Foreign) and left; each write is conditional (If-None-Match: *,
// or If-Match of the recorded sidecar), so that a file put there meanwhile
// stays too.
//
// Each sidecar is an ingest.Write of unknown length that the encoder
// writes into: its bytes go to the store's own staging (on a folder, a
// temporary file in .largo/tmp, which a crash leaves for disk.Store.Sweep;
// on a bucket, an upload invisible until committed), never beside the
// files, and a commit makes the whole of it appear at once, so the server
// sees the old sidecar or the new one, never a part. The write is aborted,
// leaving nothing, when the sidecar saves less than MinSaving of the
// original, or when the original changed while it was compressed (its
// ETag, size or time differ from those of the version read). A stale
// sidecar that is not replaced is removed, under If-Match on its own ETag,
// so that a sidecar written meanwhile by another run stays. A new sidecar
// gets the store's permissions for new files, not the original's (a
// replaced one keeps its own, on a folder).
package precompress

import (
	"bufio"
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"largo/encode"
	"largo/ingest"
	"largo/sidecar"
)

// MinSaving is the least fraction of a file's size a sidecar must save to
// be kept: below it the server might as well send the file itself.
const MinSaving = 0.10

// Config configures Prepare and Run. Writes is required.
type Config struct {
	// Writes is the write pipeline the sidecars go through; the files are
	// read from its store (Writes.Store()).
	Writes *ingest.Pipeline
	// MediaType returns the media type of a file from its name, or "" when
	// the name does not tell; the file's first bytes decide then. Nil
	// means mime.TypeByExtension. A type the store keeps for the file
	// (largo.Info.ContentType, on a bucket) comes first, as when serving.
	MediaType func(name string) string
	// Jobs is the number of sidecars compressed at once; zero means one per
	// core.
	Jobs int
	// Level is the compression level. The zero value is encode.Fast;
	// sidecars are meant for encode.Max, what largo precompress uses.
	Level encode.Level
	// Codings are the codings to write; nil means all of encode.Codings.
	Codings []encode.Coding
	// Progress, if set, is called from the workers (one call at a time)
	// after each task, and once per skipped file.
	Progress func(Event)
	// Read, if set, is called as the workers read the files being
	// compressed, with the bytes read, from several goroutines at once:
	// the fine-grained progress of Plan.Bytes.
	Read func(n int64)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AnySidecars takes every file under a sidecar's name for a sidecar,
	// as largo serve --sidecars any does: a fresh one (no older than its
	// original) counts as up to date, and a stale one is written over.
	// False, the default, knows only the sidecars it recorded (package
	// sidecar): a file of someone else's under a sidecar's name is left
	// as it is (Event.Foreign).
	AnySidecars bool
}

// Event reports one task: a sidecar written, not worth keeping, skipped
// as fresh, or failed.
type Event struct {
	// Name is the original file's name in the store, slash-separated.
	Name string
	// Coding is the sidecar's coding; "" for a skipped file.
	Coding encode.Coding
	// Size is the original's size, and Encoded the sidecar's (0 when
	// skipped or failed).
	Size, Encoded int64
	// Kept reports a sidecar written; Fresh a file skipped because its
	// sidecars are up to date; Foreign a sidecar not written because a
	// file of its own has its name (see Config.AnySidecars), which is no
	// failure.
	Kept, Fresh, Foreign bool
	// Err is the failure of the task, if any.
	Err error
}

// Summary totals a run.
type Summary struct {
	// Files is the number of compressible files found; Fresh of those
	// skipped as up to date; Compressed of those compressed now.
	Files, Fresh, Compressed int
	// Sidecars is the number of sidecars written; Dropped the number not
	// kept for saving too little; Foreign the number not written because a
	// file of its own has the name; Failed the number of failed tasks.
	Sidecars, Dropped, Foreign, Failed int
	// Before is the total size of the files compressed now; After the
	// total of the smallest sidecar of each (the original's size when no
	// sidecar was kept): what the best-compressing client receives.
	Before, After int64
	// Bytes holds the total size of the written sidecars per coding.
	Bytes map[encode.Coding]int64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// recordsOf returns a Checker over the records of cfg's store (none for
// a store without a state area).
func recordsOf(cfg Config) *sidecar.Checker { return sidecar.NewChecker(cfg.Writes.Files()) }

func defaults(cfg Config) Config {
	if cfg.MediaType == nil {
		cfg.MediaType = extType
	}
	if cfg.Jobs <= 0 {
		cfg.Jobs = runtime.GOMAXPROCS(0)
	}
	if cfg.Codings == nil {
		cfg.Codings = encode.Codings[:]
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// Run writes the sidecars of plan, which Prepare made from the same cfg,
// and returns the totals. It returns an error only when ctx was
// cancelled; failures of single sidecars are in the Summary and the
// Events.
func Run(ctx context.Context, cfg Config, plan *Plan) (Summary, error) {
	cfg = defaults(cfg)
	start := cfg.Now()
	sum := Summary{Files: len(plan.Files) + len(plan.Fresh), Fresh: len(plan.Fresh), Bytes: map[encode.Coding]int64{}}

	var mu sync.Mutex // guards sum, smallest and Progress calls
	report := func(ev Event) {
		if cfg.Progress != nil {
			cfg.Progress(ev)
		}
	}
	for _, name := range plan.Fresh {
		report(Event{Name: name, Fresh: true})
	}
	smallest := map[string]int64{}
	records := recordsOf(cfg)
	type task struct {
		name string
		c    encode.Coding
	}
	tasks := make(chan task)
	var wg sync.WaitGroup
	for range cfg.Jobs {
		wg.Go(func() {
			// Each worker's encoders write through one buffer of its own,
			// so that the pipeline stores whole buffers, not the
			// encoders' small pieces.
			s := &writer{cfg: &cfg, records: records, buf: bufio.NewWriterSize(nil, bufSize)}
			for t := range tasks {
				ev := Event{Name: t.name, Coding: t.c, Size: plan.sizes[t.name]}
				if ctx.Err() == nil {
					ev.Encoded, ev.Kept, ev.Err = s.write(ctx, t.name, t.c)
				} else {
					ev.Err = ctx.Err()
				}
				if errors.Is(ev.Err, errForeign) {
					ev.Foreign, ev.Err = true, nil
				}
				mu.Lock()
				switch {
				case ev.Foreign:
					sum.Foreign++
				case ev.Err != nil:
					sum.Failed++
				case ev.Kept:
					sum.Sidecars++
					sum.Bytes[t.c] += ev.Encoded
					if s, ok := smallest[t.name]; !ok || ev.Encoded < s {
						smallest[t.name] = ev.Encoded
					}
				default:
					sum.Dropped++
				}
				report(ev)
				mu.Unlock()
			}
		})
	}
	for _, name := range plan.Files {
		for _, c := range cfg.Codings {
			select {
			case tasks <- task{name, c}:
			case <-ctx.Done():
			}
		}
	}
	close(tasks)
	wg.Wait()
	for _, name := range plan.Files {
		size := plan.sizes[name]
		sum.Compressed++
		sum.Before += size
		if s, ok := smallest[name]; ok {
			sum.After += s
		} else {
			sum.After += size
		}
	}
	sum.Elapsed = cfg.Now().Sub(start)
	return sum, ctx.Err()
}
