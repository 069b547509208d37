package serve

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"largo/disk"
	"largo/filecache"
	"largo/internal/logwriter"
	"largo/record"
)

// BenchmarkSmallFile serves a 4 KiB file through the whole handler, side
// by side with Go's http.FileServer on the same file: without a log, with
// the access log written straight to a file, and with it written through
// the queue the server uses (package logwriter), and read through the
// open-file cache (package filecache). The allocations per
// request are the steadiest figure on a shared machine.
//
//	go test -run XXX -bench SmallFile -benchmem ./serve
func BenchmarkSmallFile(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "small.bin"), make([]byte, 4096), 0o644)
	s, err := disk.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	logFile, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	queue := logwriter.New(logFile, 0)
	defer queue.Close()
	// The records of files, migrated from an earlier release's layout as
	// the server does at start: until then a file without a record is
	// looked for in the old layout on every request too.
	files := record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
	if _, err := files.Migrate(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"fileserver", http.FileServer(http.Dir(dir))},
		{"largo-nolog", New(Config{Store: s, Files: files})},
		{"largo-log-direct", New(Config{Store: s, Files: files, Logger: slog.New(slog.NewTextHandler(logFile, nil))})},
		{"largo-log-queued", New(Config{Store: s, Files: files, Logger: slog.New(slog.NewTextHandler(queue, nil))})},
		{"largo-log-hand", New(Config{Store: s, Files: files, Logger: slog.New(slog.NewTextHandler(queue, nil)), AccessLog: queue})},
		{"largo-cached", New(Config{Store: s, Files: files, Cache: filecache.New(s, filecache.Options{}), Logger: slog.New(slog.NewTextHandler(queue, nil)), AccessLog: queue})},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			req := httptest.NewRequest("GET", "/small.bin", nil)
			req.RemoteAddr = "127.0.0.1:1"
			for b.Loop() {
				rec := httptest.NewRecorder()
				tt.h.ServeHTTP(rec, req)
				if rec.Code != 200 || rec.Body.Len() != 4096 {
					b.Fatal(rec.Code, rec.Body.Len())
				}
			}
		})
	}
}
