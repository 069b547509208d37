package resumable

import (
	"context"
	"log/slog"
	"slices"

	xslog "golang.org/x/exp/slog"
)

// tusLogger adapts largo's logger to the x/exp/slog logger tusd takes.
// tusd logs every request and chunk at Info; only its warnings and errors
// come through, less the read errors of interrupted uploads, which are a
// normal part of resuming and already in the access log.
func tusLogger(l *slog.Logger) *xslog.Logger {
	return xslog.New(&tusHandler{h: l.Handler()})
}

type tusHandler struct {
	h     slog.Handler
	attrs []slog.Attr
}

func (t *tusHandler) Enabled(ctx context.Context, lv xslog.Level) bool {
	return lv >= xslog.LevelWarn && t.h.Enabled(ctx, slog.Level(lv))
}

func (t *tusHandler) Handle(ctx context.Context, r xslog.Record) error {
	if r.Message == "BodyReadError" {
		return nil
	}
	rec := slog.NewRecord(r.Time, slog.Level(r.Level), "tus: "+r.Message, r.PC)
	rec.AddAttrs(t.attrs...)
	r.Attrs(func(a xslog.Attr) bool {
		rec.AddAttrs(slog.Any(a.Key, a.Value.Any()))
		return true
	})
	return t.h.Handle(ctx, rec)
}

func (t *tusHandler) WithAttrs(as []xslog.Attr) xslog.Handler {
	n := &tusHandler{h: t.h, attrs: slices.Clip(t.attrs)}
	for _, a := range as {
		n.attrs = append(n.attrs, slog.Any(a.Key, a.Value.Any()))
	}
	return n
}

// WithGroup flattens groups: tusd uses none that matter.
func (t *tusHandler) WithGroup(string) xslog.Handler { return t }
