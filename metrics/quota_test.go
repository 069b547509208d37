package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWatchQuotas(t *testing.T) {
	m := New(nil)
	m.WatchQuotas(func() []QuotaLine {
		return []QuotaLine{
			{Quota: "path:/projects", UsedBytes: 1500, UsedFiles: 3, LimitBytes: 10000},
			{Quota: "user:alice", UsedBytes: 7, UsedFiles: 1, LimitFiles: 5},
		}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	out := string(b)
	for _, want := range []string{
		`largo_quota_used_bytes{quota="path:/projects"} 1500`,
		`largo_quota_used_files{quota="path:/projects"} 3`,
		`largo_quota_limit_bytes{quota="path:/projects"} 10000`,
		`largo_quota_used_bytes{quota="user:alice"} 7`,
		`largo_quota_limit_files{quota="user:alice"} 5`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, absent := range []string{`largo_quota_limit_files{quota="path:/projects"}`, `largo_quota_limit_bytes{quota="user:alice"}`} {
		if strings.Contains(out, absent) {
			t.Errorf("metrics export a limit that is none: %q", absent)
		}
	}
}
