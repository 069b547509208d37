package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"largo"
)

// Result is what one repetition of one case of a scenario measured on one
// server.
type Result struct {
	Scenario string `json:"scenario"`
	Server   string `json:"server"`
	Case     string `json:"case"`
	Rep      int    `json:"rep"`
	// Outcome is "ok", or what went wrong: "killed by the guard at N
	// MiB", "crashed ...", "short body ...", "not supported by this
	// server ...".
	Outcome string             `json:"outcome"`
	Values  map[string]float64 `json:"values,omitempty"`
	Text    map[string]string  `json:"text,omitempty"`
}

// set records a figure.
func (r *Result) set(key string, v float64) {
	if r.Values == nil {
		r.Values = map[string]float64{}
	}
	r.Values[key] = v
}

// note records a word.
func (r *Result) note(key, v string) {
	if r.Text == nil {
		r.Text = map[string]string{}
	}
	r.Text[key] = v
}

// fail records err as the outcome, unless one is already recorded.
func (r *Result) fail(err error) {
	if err != nil && (r.Outcome == "" || r.Outcome == OK) {
		r.Outcome = err.Error()
	}
}

// Row is the results of one case on one server, over the repetitions.
type Row struct {
	Scenario string            `json:"scenario"`
	Server   string            `json:"server"`
	Case     string            `json:"case"`
	Outcome  string            `json:"outcome"`
	OK       int               `json:"ok"`   // repetitions that went as planned
	Reps     int               `json:"reps"` // repetitions run
	Values   map[string]Spread `json:"values,omitempty"`
	Text     map[string]string `json:"text,omitempty"`
}

// Machine says where the lab ran.
type Machine struct {
	CPU    string `json:"cpu,omitempty"`
	Cores  int    `json:"cores"`
	Memory int64  `json:"memory"`
	Kernel string `json:"kernel,omitempty"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	Go     string `json:"go"`
}

// Settings is the configuration a report was made with.
type Settings struct {
	Scenarios   []string          `json:"scenarios"`
	Size        int64             `json:"size"`
	Quick       bool              `json:"quick"`
	Concurrency []int             `json:"concurrency"`
	Files       int               `json:"files,omitempty"`
	HoldSeconds float64           `json:"hold_seconds"`
	Reps        int               `json:"reps"`
	Client      string            `json:"client"`
	MemoryGuard int64             `json:"memory_guard"`
	Servers     map[string]string `json:"servers"` // name: command
	// BucketServer is the endpoint of the bucket scenario's S3 server
	// when it is one already running (Config.Bucket), "" for versitygw.
	BucketServer string `json:"bucket_server,omitempty"`

	// The distance scenario's path: round trips, and each connection's
	// cap and window (bytes per second, bytes; 0: none).
	RTTMillis    []float64 `json:"rtt_ms,omitempty"`
	StreamRate   int64     `json:"stream_rate,omitempty"`
	StreamWindow int64     `json:"stream_window,omitempty"`
}

// Report is the outcome of a run. Rows is filled in when the run ends.
type Report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	Results  []Result  `json:"results"`
	Rows     []Row     `json:"rows"`
}

func newReport(cfg Config, dataDir string) *Report {
	servers := map[string]string{}
	for _, s := range cfg.Servers {
		servers[s.Name] = reportCommand(s.Command, s.Name, cfg.Exe, dataDir)
		if s.Hostile != "" && slices.Contains(cfg.Scenarios, hostileScenario.name) {
			servers[s.Name] += "; in the hostile scenario: " + reportCommand(s.Hostile, s.Name, cfg.Exe, dataDir)
		}
	}
	return &Report{
		Started: time.Now(),
		Machine: machine(),
		Settings: Settings{
			Scenarios: cfg.Scenarios, Size: cfg.Size, Quick: cfg.Quick, Concurrency: cfg.Concurrency, Files: cfg.Files,
			HoldSeconds: cfg.Hold.Seconds(), Reps: cfg.Reps, Client: cfg.Client, MemoryGuard: cfg.MemoryGuard,
			Servers: servers, RTTMillis: rttMillis(cfg.RTTs), StreamRate: cfg.StreamRate, StreamWindow: cfg.StreamWindow,
			BucketServer: cfg.Bucket.Endpoint,
		},
	}
}

// reportCommand is a server's command as the report shows it: run as it
// was, its placeholders given their values ({exe} the binary, {dir} the
// data folder, {idle} the hostile scenario's timeout, {tmp} the pattern
// of the server's scratch folders); only the port, picked afresh for each
// run of a server that cannot pick its own, is named PORT.
func reportCommand(command, name, exe, dataDir string) string {
	return strings.TrimPrefix(expand(command, map[string]string{
		"{exe}":  exe,
		"{dir}":  dataDir,
		"{idle}": hostileIdle.String(),
		"{tmp}":  filepath.Join(os.TempDir(), "largo-bench-"+safeName(name)+"-*"),
		"{port}": "PORT",
	}, true), "exec ")
}

func (rep *Report) add(r Result) { rep.Results = append(rep.Results, r) }

// finish records the run's duration and groups the results into rows.
func (rep *Report) finish() {
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.regroup()
}

// regroup groups the results into rows, in the order cases first ran.
func (rep *Report) regroup() {
	rep.Rows = nil
	type key struct{ scenario, server, cs string }
	index := map[key]int{}
	var groups [][]Result
	for _, r := range rep.Results {
		k := key{r.Scenario, r.Server, r.Case}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	for _, g := range groups {
		rep.Rows = append(rep.Rows, summarise(g))
	}
}

// summarise makes one row of the repetitions of a case.
func summarise(rs []Result) Row {
	row := Row{Scenario: rs[0].Scenario, Server: rs[0].Server, Case: rs[0].Case, Reps: len(rs), Values: map[string]Spread{}, Text: map[string]string{}}
	vals := map[string][]float64{}
	texts := map[string][]string{}
	var outcomes []string
	for _, r := range rs {
		if r.Outcome == OK {
			row.OK++
		}
		outcomes = append(outcomes, r.Outcome)
		for k, v := range r.Values {
			vals[k] = append(vals[k], v)
		}
		for k, v := range r.Text {
			texts[k] = append(texts[k], v)
		}
	}
	for k, v := range vals {
		row.Values[k] = spread(v)
	}
	for k, v := range texts {
		row.Text[k] = tally(v, len(rs))
	}
	row.Outcome = tally(outcomes, len(rs))
	return row
}

// number finds the numbers in a word.
var number = regexp.MustCompile(`[0-9]+`)

// tally joins the distinct words of n repetitions, counting each when they
// differ: "ok", or "ok 2/3; crashed 1/3". Words that differ only in one
// number count as one, with the number's range: "killed by the guard at
// 12132–12520 MiB".
func tally(words []string, n int) string {
	type group struct {
		count    int
		lo, hi   int
		template string // the word with its number as #, or the word
	}
	groups := map[string]*group{}
	var order []string
	for _, w := range words {
		key, num := w, -1
		if nums := number.FindAllString(w, -1); len(nums) == 1 {
			key = number.ReplaceAllString(w, "#")
			num, _ = strconv.Atoi(nums[0])
		}
		g := groups[key]
		if g == nil {
			g = &group{lo: num, hi: num, template: key}
			groups[key] = g
			order = append(order, key)
		}
		g.count++
		g.lo, g.hi = min(g.lo, num), max(g.hi, num)
	}
	parts := make([]string, len(order))
	for i, key := range order {
		g := groups[key]
		w := key
		if g.lo >= 0 {
			r := strconv.Itoa(g.lo)
			if g.hi != g.lo {
				r += "–" + strconv.Itoa(g.hi)
			}
			w = strings.Replace(g.template, "#", r, 1)
		}
		parts[i] = w
		if len(order) > 1 || g.count != n {
			parts[i] = fmt.Sprintf("%s %d/%d", w, g.count, n)
		}
	}
	return strings.Join(parts, "; ")
}

// Row returns the row of a case on a server, or nil.
func (rep *Report) Row(scenario, server, cs string) *Row {
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.Scenario == scenario && r.Server == server && r.Case == cs {
			return r
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes a heading, a sentence and a table per scenario.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	s := rep.Settings
	fmt.Fprintf(w, "# largo bench\n\n%d-core %s, %s of memory, Linux %s, %s. File size %s, %d repetition(s) interleaved across servers, %s client, memory guard %s; figures are medians with (min–max) over repetitions.\n",
		rep.Machine.Cores, rep.Machine.CPU, largo.FormatSize(rep.Machine.Memory), rep.Machine.Kernel, rep.Machine.Go,
		largo.FormatSize(s.Size), s.Reps, s.Client, largo.FormatSize(s.MemoryGuard))
	names := slices.Sorted(maps.Keys(s.Servers))
	fmt.Fprintf(w, "\nServers:\n\n")
	for _, n := range names {
		fmt.Fprintf(w, "- **%s**: `%s`\n", n, s.Servers[n])
	}
	for _, name := range s.Scenarios {
		sc := findScenario(name)
		var rows []Row
		for _, r := range rep.Rows {
			if r.Scenario == name {
				rows = append(rows, r)
			}
		}
		if sc == nil || len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s\n\n%s\n\n", sc.name, sc.about(rep.Settings))
		head := []string{"server", sc.caseHead, "outcome"}
		for _, c := range sc.columns {
			head = append(head, c.head)
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			cells := []string{r.Server, r.Case, cell(r.Outcome)}
			for _, c := range sc.columns {
				cells = append(cells, c.format(r))
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	_, err := fmt.Fprintf(w, "\nTook %s.\n", (time.Duration(rep.Seconds) * time.Second).String())
	return err
}

// column is one figure of a scenario's table.
type column struct {
	key, head string
	digits    int  // decimals of a figure
	text      bool // a word from Result.Text rather than a figure
}

// format renders the column's cell of a row.
func (c column) format(r Row) string {
	if c.text {
		if v, ok := r.Text[c.key]; ok {
			return cell(v)
		}
		return "–"
	}
	s, ok := r.Values[c.key]
	if !ok || s.N == 0 {
		return "–"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', c.digits, 64) }
	if s.N == 1 || f(s.Min) == f(s.Max) {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

// cell makes a string safe in a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// ReadReport reads a report written by WriteJSON, so that its tables and
// charts can be made again without running the lab.
func ReadReport(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("reading the report: %w", err)
	}
	if len(rep.Settings.Scenarios) == 0 || len(rep.Results) == 0 {
		return nil, fmt.Errorf("reading the report: no results")
	}
	rep.regroup()
	return &rep, nil
}
