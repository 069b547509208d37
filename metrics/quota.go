package metrics

import (
	"slices"
	"strings"
)

// QuotaLine is the usage of one quota (package quota), as exported.
type QuotaLine struct {
	// Quota names it: "user:NAME" or "path:/PATH".
	Quota string
	// UsedBytes and UsedFiles are what is counted against it.
	UsedBytes, UsedFiles int64
	// LimitBytes and LimitFiles are its limits; zero means none, and
	// exports no series.
	LimitBytes, LimitFiles int64
}

// WatchQuotas exports the usage of quotas: at every scrape, lines tells
// it, as the gauges largo_quota_used_bytes, largo_quota_used_files,
// largo_quota_limit_bytes and largo_quota_limit_files, labelled with the
// quota. Call it at most once.
func (m *Metrics) WatchQuotas(lines func() []QuotaLine) {
	m.reg.add(func() []family { return quotaFamilies(lines()) })
}

// quotaFamilies are the four gauges of the quotas' usage, a series per
// quota in the order of their names; a limit that is none has no series.
func quotaFamilies(lines []QuotaLine) []family {
	lines = slices.Clone(lines)
	slices.SortFunc(lines, func(a, b QuotaLine) int { return strings.Compare(a.Quota, b.Quota) })
	fams := []family{
		{name: "largo_quota_used_bytes", help: "Bytes counted against a quota (a user's: the files they own; a path's: the files under it).", kind: kindGauge},
		{name: "largo_quota_used_files", help: "Files counted against a quota.", kind: kindGauge},
		{name: "largo_quota_limit_bytes", help: "A quota's limit in bytes (no series: none).", kind: kindGauge},
		{name: "largo_quota_limit_files", help: "A quota's limit in files (no series: none).", kind: kindGauge},
	}
	for _, l := range lines {
		q := []label{{"quota", l.Quota}}
		for i, v := range []int64{l.UsedBytes, l.UsedFiles, l.LimitBytes, l.LimitFiles} {
			if i < 2 || v > 0 {
				fams[i].samples = append(fams[i].samples, sample{labels: q, value: float64(v)})
			}
		}
	}
	return fams
}
