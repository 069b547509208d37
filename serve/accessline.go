package serve

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// The access line built by hand (Config.AccessLog): the bytes
// slog.TextHandler writes for the same record, without slog's attribute
// values, its Record's overflow slice and its handler's lock, appended to a
// pooled buffer and given to the writer in one Write. TestAccessLineAsSlog
// holds the two to the same output.

// linePool holds the buffers lines are built in (one per Handler), and
// the last second a line was written in, formatted.
type linePool struct {
	sync.Pool
	second atomic.Pointer[second]
}

// second is a second of a time zone, formatted up to its fraction, and
// the zone's suffix.
type second struct {
	unix   int64
	loc    *time.Location
	prefix []byte // 2006-01-02T15:04:05.
	zone   []byte // Z07:00
}

// appendTime appends t in timeLayout, formatting its second only once.
func (p *linePool) appendTime(b []byte, t time.Time) []byte {
	s := p.second.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		f := t.Truncate(time.Second).AppendFormat(nil, timeLayout)
		s = &second{unix: t.Unix(), loc: t.Location(), prefix: f[:20], zone: f[23:]}
		p.second.Store(s)
	}
	b = append(b, s.prefix...)
	ms := t.Nanosecond() / 1e6
	b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

func (p *linePool) get() *[]byte {
	if bp, ok := p.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 256)
	return &b
}

// maxPooledLine is the largest buffer given back to the pool: a line with
// a long path or error does not keep its buffer alive.
const maxPooledLine = 4 << 10

// accessLine is one request's fields, in the order they are written.
type accessLine struct {
	at       time.Time
	method   string
	path     string
	query    string // empty: left out
	status   int
	bytes    int64
	duration time.Duration
	client   string
	outcome  string
	rng      string // empty: left out
	encoding string // empty: left out
	err      string // empty: left out
}

// attrs appends the line's fields as slog attributes to a, for a Logger
// (a caller's array of eleven on its stack holds them without an
// allocation).
func (l *accessLine) attrs(a []slog.Attr) []slog.Attr {
	attrs := append(a,
		slog.String("method", l.method),
		slog.String("path", l.path),
	)
	if l.query != "" {
		attrs = append(attrs, slog.String("query", l.query))
	}
	attrs = append(attrs,
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Duration("duration", l.duration),
		slog.String("client", l.client),
		slog.String("outcome", l.outcome),
	)
	if l.rng != "" {
		attrs = append(attrs, slog.String("range", l.rng))
	}
	if l.encoding != "" {
		attrs = append(attrs, slog.String("encoding", l.encoding))
	}
	if l.err != "" {
		attrs = append(attrs, slog.String("err", l.err))
	}
	return attrs
}

// write appends the line to a buffer of pool and writes it to w.
func (l *accessLine) write(w io.Writer, pool *linePool) error {
	bp := pool.get()
	b := l.append((*bp)[:0], pool)
	_, err := w.Write(b)
	if cap(b) <= maxPooledLine {
		*bp = b
		pool.Put(bp)
	}
	return err
}

// append appends the line, newline included, to b; pool formats its
// time.
func (l *accessLine) append(b []byte, pool *linePool) []byte {
	b = append(b, "time="...)
	b = pool.appendTime(b, l.at)
	b = append(b, " level=INFO msg=request method="...)
	b = appendTextString(b, l.method)
	b = append(b, " path="...)
	b = appendTextString(b, l.path)
	if l.query != "" {
		b = append(b, " query="...)
		b = appendTextString(b, l.query)
	}
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, " duration="...)
	b = append(b, l.duration.String()...)
	b = append(b, " client="...)
	b = appendTextString(b, l.client)
	b = append(b, " outcome="...)
	b = appendTextString(b, l.outcome)
	if l.rng != "" {
		b = append(b, " range="...)
		b = appendTextString(b, l.rng)
	}
	if l.encoding != "" {
		b = append(b, " encoding="...)
		b = appendTextString(b, l.encoding)
	}
	if l.err != "" {
		b = append(b, " err="...)
		b = appendTextString(b, l.err)
	}
	return append(b, '\n')
}

// timeLayout is how slog's text handler writes a record's time: to the
// millisecond, with its zone.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// appendTextString appends s as a value of slog's text format: as it is,
// or quoted with Go's rules when it is empty or holds a space, an equals
// sign, a quote, a control character or anything not printable.
func appendTextString(b []byte, s string) []byte {
	if textNeedsQuotes(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func textNeedsQuotes(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}
