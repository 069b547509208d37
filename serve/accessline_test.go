package serve

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestAccessLineAsSlog holds the line built by hand to the bytes
// slog.TextHandler writes for the same fields.
func TestAccessLineAsSlog(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891_999_999, time.FixedZone("", 2*3600))
	base := accessLine{at: at, method: "GET", path: "/a/b.bin", status: 200, bytes: 4096,
		duration: 12345 * time.Nanosecond, client: "127.0.0.1:50000", outcome: "complete"}
	cases := map[string]func(*accessLine){
		"plain":         func(*accessLine) {},
		"utc":           func(l *accessLine) { l.at = at.UTC() },
		"whole second":  func(l *accessLine) { l.at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
		"space":         func(l *accessLine) { l.path = "/with space.txt" },
		"equals":        func(l *accessLine) { l.path = "/a=b" },
		"quote":         func(l *accessLine) { l.path = `/say"hi"` },
		"backslash":     func(l *accessLine) { l.path = `/back\slash` },
		"control":       func(l *accessLine) { l.path = "/tab\there\x01\x7f" },
		"unicode":       func(l *accessLine) { l.path = "/naïve/日本.txt" },
		"unicode space": func(l *accessLine) { l.path = "/no\u00a0break\u2028" },
		"bad utf8":      func(l *accessLine) { l.path = "/\xff\xfe" },
		"empty method":  func(l *accessLine) { l.method = "" },
		"range":         func(l *accessLine) { l.rng = "bytes=0-99,200-" },
		"query":         func(l *accessLine) { l.query = "archive=zip&x=a b" },
		"encoding":      func(l *accessLine) { l.encoding = "zstd" },
		"err":           func(l *accessLine) { l.outcome = "aborted"; l.err = "write tcp: broken pipe" },
		"all":           func(l *accessLine) { l.rng = "bytes=1-"; l.encoding = "gzip"; l.err = "x=y" },
		"long":          func(l *accessLine) { l.duration = 3*time.Hour + time.Millisecond; l.bytes = 5 << 40 },
		"negative":      func(l *accessLine) { l.status = 0; l.bytes = -1 },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			l := base
			change(&l)
			var want bytes.Buffer
			rec := slog.NewRecord(l.at, slog.LevelInfo, "request", 0)
			rec.AddAttrs(l.attrs(nil)...)
			if err := slog.NewTextHandler(&want, nil).Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := l.write(&got, new(linePool)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("by hand:\n%q\nslog:\n%q", got.String(), want.String())
			}
		})
	}
}

// BenchmarkAccessLine is one access line through slog's text handler and
// built by hand, both into a discarding writer.
func BenchmarkAccessLine(b *testing.B) {
	l := accessLine{at: time.Now(), method: "GET", path: "/small.bin", status: 200, bytes: 4096,
		duration: 12345 * time.Nanosecond, client: "127.0.0.1:50000", outcome: "complete"}
	b.Run("slog", func(b *testing.B) {
		log := slog.New(slog.NewTextHandler(discard{}, nil))
		b.ReportAllocs()
		for b.Loop() {
			var a [10]slog.Attr
			log.LogAttrs(context.Background(), slog.LevelInfo, "request", l.attrs(a[:0])...)
		}
	})
	b.Run("hand", func(b *testing.B) {
		var pool linePool
		b.ReportAllocs()
		for b.Loop() {
			l.write(discard{}, &pool)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The time of a line, formatted a second at a time, is what formatting
// it whole gives.
func TestAccessLineTime(t *testing.T) {
	var p linePool
	east := time.FixedZone("east", 5*3600+30*60)
	base := time.Date(2026, 12, 7, 15, 4, 5, 0, time.UTC)
	for _, tm := range []time.Time{
		base, base.Add(5 * time.Millisecond), base.Add(999*time.Millisecond + 999), base.Add(time.Second + 40*time.Millisecond),
		base.In(east), base.Add(123 * time.Millisecond).In(east), base.Add(123 * time.Millisecond),
	} {
		if got, want := string(p.appendTime(nil, tm)), tm.Format(timeLayout); got != want {
			t.Errorf("%v: %s; want %s", tm, got, want)
		}
	}
}
