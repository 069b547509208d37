package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"

	"largo/disk"
	"largo/serve"
)

// settle leaves a server that is about to go idle holding what serving
// uses, and little else. Start-up runs the initialisers of every package in
// the binary (S3 and tus clients, compressors, templates) and leaves
// garbage; all of it counts as resident memory until let go. settle
//
//   - returns the garbage's pages to the system;
//   - drops the executable's pages, which start-up faulted in by the
//     megabyte (see dropStartupPages);
//   - maps the handler's code in again (warmUp), so that a first client
//     does not show as growth;
//   - resets the process's peak resident size (VmHWM), so that it measures
//     serving rather than start-up.
//
// The code of the connections themselves (net/http's server, sendfile) is
// mapped by the first client; that, with its buffers, is about 1.5 MiB.
func settle(cfg serve.Config) {
	debug.FreeOSMemory()
	dropStartupPages()
	warmUp(cfg)
	debug.FreeOSMemory()
	resetPeak()
}

// warmUp passes a few requests through a copy of the handler that serves
// an empty scratch folder (the served one may be huge, or a bucket) and
// logs and counts nothing.
func warmUp(cfg serve.Config) {
	dir, err := os.MkdirTemp("", "largo-warm-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	st, err := disk.Open(dir)
	if err != nil {
		return
	}
	defer st.Close()
	cfg.Store = st
	cfg.Logger, cfg.Observer, cfg.Uploads, cfg.Compression = nil, nil, nil, nil
	h := serve.New(cfg)
	for _, target := range []string{"/_largo/healthz", "/_largo/readyz", "/_largo/metrics", "/", "/?format=json", "/nothing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
}
