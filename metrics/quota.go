package metrics

import "github.com/prometheus/client_golang/prometheus"

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
	m.reg.MustRegister(&quotaCollector{lines: lines})
}

var (
	quotaUsedBytes  = prometheus.NewDesc("largo_quota_used_bytes", "Bytes counted against a quota (a user's: the files they own; a path's: the files under it).", []string{"quota"}, nil)
	quotaUsedFiles  = prometheus.NewDesc("largo_quota_used_files", "Files counted against a quota.", []string{"quota"}, nil)
	quotaLimitBytes = prometheus.NewDesc("largo_quota_limit_bytes", "A quota's limit in bytes (no series: none).", []string{"quota"}, nil)
	quotaLimitFiles = prometheus.NewDesc("largo_quota_limit_files", "A quota's limit in files (no series: none).", []string{"quota"}, nil)
)

// quotaCollector reads the quotas' usage at each scrape.
type quotaCollector struct{ lines func() []QuotaLine }

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaUsedBytes
	ch <- quotaUsedFiles
	ch <- quotaLimitBytes
	ch <- quotaLimitFiles
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.lines() {
		ch <- prometheus.MustNewConstMetric(quotaUsedBytes, prometheus.GaugeValue, float64(l.UsedBytes), l.Quota)
		ch <- prometheus.MustNewConstMetric(quotaUsedFiles, prometheus.GaugeValue, float64(l.UsedFiles), l.Quota)
		if l.LimitBytes > 0 {
			ch <- prometheus.MustNewConstMetric(quotaLimitBytes, prometheus.GaugeValue, float64(l.LimitBytes), l.Quota)
		}
		if l.LimitFiles > 0 {
			ch <- prometheus.MustNewConstMetric(quotaLimitFiles, prometheus.GaugeValue, float64(l.LimitFiles), l.Quota)
		}
	}
}
