package metrics

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The kinds of metric a family may be, as its TYPE line says them.
const (
	kindCounter = "counter"
	kindGauge   = "gauge"
	kindSummary = "summary"
)

// value is a float64 changed atomically: a counter's or a gauge's.
type value struct{ bits atomic.Uint64 }

// Add adds d (negative for a gauge going down).
func (v *value) Add(d float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Inc adds one.
func (v *value) Inc() { v.Add(1) }

// Dec takes one away.
func (v *value) Dec() { v.Add(-1) }

// Set replaces the value with f.
func (v *value) Set(f float64) { v.bits.Store(math.Float64bits(f)) }

// Get returns the value.
func (v *value) Get() float64 { return math.Float64frombits(v.bits.Load()) }

// label is one label of a sample: its name and value.
type label struct{ name, value string }

// sample is one line of the exposition: the family's name and suffix (a
// summary's _sum and _count), its labels and its value.
type sample struct {
	suffix string
	labels []label
	value  float64
}

// family is one metric as exposed: its name, help, kind and, at each
// scrape, its samples. A family with no sample is left out, as a
// registry of the Prometheus client leaves it.
type family struct {
	name, help, kind string
	samples          []sample
}

// source gives families at each scrape: a metric of its own, or a set read
// from the runtime or the system.
type source func() []family

// single is a source of one metric without labels.
func single(name, help, kind string, v *value) source {
	return func() []family {
		return []family{{name: name, help: help, kind: kind, samples: []sample{{value: v.Get()}}}}
	}
}

// vec is a metric with labels: a value for each combination of label
// values, made on first use. It is safe for concurrent use.
type vec struct {
	name, help, kind string
	labels           []string

	mu     sync.RWMutex
	series map[string]*labelled
}

// labelled is one series of a vec.
type labelled struct {
	values []string
	v      value
}

// newVec returns an empty vec with the label names labels.
func newVec(name, help, kind string, labels ...string) *vec {
	return &vec{name: name, help: help, kind: kind, labels: labels, series: make(map[string]*labelled)}
}

// with returns the series of the label values vals, one per label name,
// made at zero on first use.
func (v *vec) with(vals ...string) *value {
	if len(vals) != len(v.labels) {
		panic("metrics: " + v.name + " takes " + strconv.Itoa(len(v.labels)) + " label values")
	}
	key := strings.Join(vals, "\xff")
	v.mu.RLock()
	s, ok := v.series[key]
	v.mu.RUnlock()
	if ok {
		return &s.v
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok = v.series[key]; !ok {
		s = &labelled{values: slices.Clone(vals)}
		v.series[key] = s
	}
	return &s.v
}

// source exposes the vec, its series in the order of their label values.
func (v *vec) source() []family {
	v.mu.RLock()
	all := make([]*labelled, 0, len(v.series))
	for _, s := range v.series {
		all = append(all, s)
	}
	v.mu.RUnlock()
	slices.SortFunc(all, func(a, b *labelled) int { return slices.Compare(a.values, b.values) })
	f := family{name: v.name, help: v.help, kind: v.kind, samples: make([]sample, len(all))}
	for i, s := range all {
		ls := make([]label, len(v.labels))
		for j, n := range v.labels {
			ls[j] = label{n, s.values[j]}
		}
		f.samples[i] = sample{labels: ls, value: s.v.Get()}
	}
	return []family{f}
}

// registry is the sources of one exposition. It is safe for concurrent
// use.
type registry struct {
	mu      sync.Mutex
	sources []source
	errors  *vec // promhttp_metric_handler_errors_total, by cause
}

// add adds sources to the exposition.
func (r *registry) add(s ...source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, s...)
}

// gather returns every family of every source, in the order of their
// names.
func (r *registry) gather() []family {
	r.mu.Lock()
	sources := slices.Clone(r.sources)
	r.mu.Unlock()
	var all []family
	for _, s := range sources {
		all = append(all, s()...)
	}
	slices.SortStableFunc(all, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return all
}

// contentType is the text exposition format's media type, version 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// ServeHTTP answers with every family in the text exposition format.
func (r *registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	for _, f := range r.gather() {
		writeFamily(&b, f)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	if _, err := w.Write(b.Bytes()); err != nil {
		r.errors.with("encoding").Inc()
	}
}

// writeFamily appends f to b: its HELP and TYPE lines, then a line per
// sample. A family without samples writes nothing.
func writeFamily(b *bytes.Buffer, f family) {
	if len(f.samples) == 0 {
		return
	}
	b.WriteString("# HELP ")
	b.WriteString(f.name)
	b.WriteByte(' ')
	escape(b, f.help, false)
	b.WriteString("\n# TYPE ")
	b.WriteString(f.name)
	b.WriteByte(' ')
	b.WriteString(f.kind)
	b.WriteByte('\n')
	for _, s := range f.samples {
		b.WriteString(f.name)
		b.WriteString(s.suffix)
		if len(s.labels) > 0 {
			b.WriteByte('{')
			for i, l := range s.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(l.name)
				b.WriteString(`="`)
				escape(b, l.value, true)
				b.WriteByte('"')
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.Write(strconv.AppendFloat(b.AvailableBuffer(), s.value, 'g', -1, 64))
		b.WriteByte('\n')
	}
}

// escape appends s to b with backslashes and line feeds escaped, and
// double quotes too in a label value (quoted).
func escape(b *bytes.Buffer, s string, quoted bool) {
	for _, c := range []byte(s) {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '"' && quoted:
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
}
