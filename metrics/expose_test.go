package metrics

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parsed is an exposition read by parseExposition: each family's kind, and
// every sample's value by its name and labels as written.
type parsed struct {
	kinds   map[string]string
	samples map[string]float64 // `name{a="x",b="y"}` (label values unescaped) or `name`
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// parseExposition reads the text exposition format 0.0.4 strictly: every
// line a HELP, a TYPE or a sample; HELP then TYPE once per family, before
// its samples, the families in the order of their names; a sample's name
// its family's (with _sum and _count for a summary); label names valid,
// values quoted with only \\, \" and \n escaped; each series once; values
// Go floats or +Inf, -Inf, NaN. The first fault is an error naming the
// line.
func parseExposition(text string) (parsed, error) {
	p := parsed{kinds: map[string]string{}, samples: map[string]float64{}}
	if !strings.HasSuffix(text, "\n") {
		return p, errors.New("the exposition does not end with a line feed")
	}
	var family, kind, last string
	helped := false
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, a ...any) (parsed, error) {
			return p, fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, a...))
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, help, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) {
				return fail("bad name")
			}
			if _, dup := p.kinds[name]; dup || name == family {
				return fail("family %s again", name)
			}
			if name <= last {
				return fail("family %s after %s: not in order", name, last)
			}
			if _, err := unescape(help, false); err != nil {
				return fail("help: %v", err)
			}
			family, kind, last, helped = name, "", name, true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, k, _ := strings.Cut(rest, " ")
			if !helped || name != family || kind != "" {
				return fail("TYPE not right after its family's HELP")
			}
			if !slices.Contains([]string{"counter", "gauge", "summary", "histogram", "untyped"}, k) {
				return fail("unknown type %q", k)
			}
			kind, p.kinds[name] = k, k
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			return fail("neither HELP, TYPE nor a sample")
		}
		if kind == "" {
			return fail("sample before its family's HELP and TYPE")
		}
		key, val, err := parseSample(line)
		if err != nil {
			return fail("%v", err)
		}
		name, _, _ := strings.Cut(key, "{")
		switch {
		case name == family:
		case kind == "summary" && (name == family+"_sum" || name == family+"_count"):
		default:
			return fail("sample of %s in family %s", name, family)
		}
		if _, dup := p.samples[key]; dup {
			return fail("series again")
		}
		p.samples[key] = val
	}
	return p, nil
}

// parseSample reads `name{label="value",...} value` into its key (label
// values unescaped) and value.
func parseSample(line string) (string, float64, error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", 0, errors.New("no value")
	}
	name, rest := line[:i], line[i:]
	if !metricName.MatchString(name) {
		return "", 0, errors.New("bad name")
	}
	key := name
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		var pairs []string
		for !strings.HasPrefix(rest, "}") {
			if len(pairs) > 0 {
				var ok bool
				if rest, ok = strings.CutPrefix(rest, ","); !ok {
					return "", 0, errors.New("labels not separated by a comma")
				}
			}
			lname, after, ok := strings.Cut(rest, `="`)
			if !ok || !regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`).MatchString(lname) {
				return "", 0, errors.New("bad label name")
			}
			end := closingQuote(after)
			if end < 0 {
				return "", 0, errors.New("label value not closed")
			}
			v, err := unescape(after[:end], true)
			if err != nil {
				return "", 0, err
			}
			pairs = append(pairs, lname+`="`+v+`"`)
			rest = after[end+1:]
		}
		key += "{" + strings.Join(pairs, ",") + "}"
		rest = rest[1:]
	}
	v, ok := strings.CutPrefix(rest, " ")
	if !ok || strings.ContainsAny(v, " \t") {
		return "", 0, errors.New("not one space then the value")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || strings.ContainsAny(v, "_xXpP") || v == "Inf" || v == "inf" || strings.EqualFold(v, "infinity") {
		return "", 0, fmt.Errorf("value %q", v)
	}
	return key, f, nil
}

// closingQuote is the index of the first double quote in s not escaped by
// a backslash, -1 if none.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes the escapes of a HELP text or a label value (quoted),
// refusing any other escape and, in a label value, a bare double quote.
func unescape(s string, quoted bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' && quoted {
			return "", errors.New("bare double quote")
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i++; i == len(s) {
			return "", errors.New("a backslash at the end")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !quoted {
				return "", errors.New(`\" in a HELP text`)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf(`unknown escape \%c`, s[i])
		}
	}
	return b.String(), nil
}

// scrape returns m's exposition, checking its content type.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestExpositionParses: the whole exposition, with every kind of family
// and label values that need escaping, reads back under the strict
// parser, value for value.
func TestExpositionParses(t *testing.T) {
	m := New([]string{"complete", "aborted"})
	m.Expired().Expired("rule")
	odd := "path:/a \"quoted\" \\ back\nslash"
	m.WatchQuotas(func() []QuotaLine {
		return []QuotaLine{
			{Quota: "user:zed", UsedBytes: 7, UsedFiles: 1, LimitFiles: 5},
			{Quota: odd, UsedBytes: 1 << 40, UsedFiles: 3, LimitBytes: 1 << 50},
		}
	})
	m.BytesSent(1 << 20)
	m.Throttled("user", 1500*1e6)
	m.Compressed("zstd", "dynamic")
	m.HookOutbox(3)
	m.PendingBytes(-2)
	out := scrape(t, m)
	p, err := parseExposition(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for key, want := range map[string]float64{
		"largo_bytes_sent_total":                                           1 << 20,
		`largo_throttled_seconds_total{key="user"}`:                        1.5,
		`largo_compressed_responses_total{coding="zstd",source="dynamic"}`: 1,
		`largo_transfers_total{outcome="aborted"}`:                         0,
		`largo_expired_files_total{why="rule"}`:                            1,
		`largo_expired_files_total{why="link"}`:                            0,
		"largo_hook_outbox_depth":                                          3,
		"largo_upload_pending_bytes":                                       -2,
		`largo_quota_used_bytes{quota="` + odd + `"}`:                      1 << 40,
		`largo_quota_limit_bytes{quota="` + odd + `"}`:                     1 << 50,
		`largo_quota_limit_files{quota="user:zed"}`:                        5,
		`promhttp_metric_handler_errors_total{cause="encoding"}`:           0,
		`go_info{version="` + runtime.Version() + `"}`:                     1,
	} {
		if got, ok := p.samples[key]; !ok || got != want {
			t.Errorf("%s = %v (there: %v), want %v", key, got, ok, want)
		}
	}
	for _, key := range []string{
		`go_gc_duration_seconds{quantile="0.5"}`, "go_gc_duration_seconds_sum", "go_gc_duration_seconds_count",
		"go_goroutines", "go_threads", "go_memstats_heap_inuse_bytes", "go_memstats_alloc_bytes_total",
		"process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds", "process_cpu_seconds_total",
	} {
		if _, ok := p.samples[key]; !ok {
			t.Errorf("%s missing", key)
		}
	}
	for _, key := range []string{
		`largo_throttled_seconds_total{key="address"}`, // never reported
		`largo_quota_limit_bytes{quota="user:zed"}`,    // no limit
	} {
		if _, ok := p.samples[key]; ok {
			t.Errorf("%s exposed", key)
		}
	}
	for name, kind := range map[string]string{
		"go_gc_duration_seconds":           "summary",
		"largo_transfers_total":            "counter",
		"largo_transfers_active":           "gauge",
		"process_cpu_seconds_total":        "counter",
		"go_memstats_alloc_bytes_total":    "counter",
		"largo_quota_used_bytes":           "gauge",
		"largo_throttled_seconds_total":    "counter",
		"go_memstats_last_gc_time_seconds": "gauge",
	} {
		if p.kinds[name] != kind {
			t.Errorf("%s is a %q, want %s", name, p.kinds[name], kind)
		}
	}
}

// TestParserRefuses: the strict parser fails each malformed exposition,
// so that TestExpositionParses can fail.
func TestParserRefuses(t *testing.T) {
	head := "# HELP a_total A.\n# TYPE a_total counter\n"
	for _, bad := range []string{
		head + "a_total 1",                                // no final line feed
		head + `a_total{x="a"b"} 1` + "\n",                // a bare quote
		head + `a_total{x="a\tb"} 1` + "\n",               // an unknown escape
		head + "a_total{x=\"a\nb\"} 1\n",                  // a raw line feed
		head + "b_total 1\n",                              // outside its family
		head + "a_total 1\na_total 2\n",                   // a series twice
		head + "a_total  1\n",                             // two spaces
		head + "a_total one\n",                            // not a number
		"# TYPE a_total counter\na_total 1\n",             // no HELP
		"# HELP b B.\n# TYPE b gauge\nb 1\n" + head,       // out of order
		head + "a_total{x=\"1\"y=\"2\"} 1\n",              // no comma
		"# HELP a A \\q.\n# TYPE a gauge\na 1\n",          // a bad escape in HELP
		head + "# HELP a_total A.\n",                      // a family twice
		"# HELP 1a A.\n# TYPE 1a gauge\n1a 1\n",           // a bad name
		"# HELP a A.\n# TYPE a histogrammm\na 1\n",        // a bad type
		"# HELP a A.\n# TYPE a gauge\na_sum 1\n",          // _sum of a gauge
		head + "# a comment that is neither\na_total 1\n", // a stray comment
	} {
		if _, err := parseExposition(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	if _, err := parseExposition(head + `a_total{x="a\"b\\c\nd"} +Inf` + "\n"); err != nil {
		t.Errorf("refused a well-formed exposition: %v", err)
	}
}
