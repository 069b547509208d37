package main

import (
	"net/http"
	"net/http/httptest"
	"runtime/debug"

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

// warmUp passes a few requests through a copy of the handler that logs
// and counts nothing: largo's own endpoints and a hidden name, none of
// which reaches the store (the served folder may be huge, or a bucket).
func warmUp(cfg serve.Config) {
	cfg.Logger, cfg.Observer, cfg.Uploads, cfg.Compression = nil, nil, nil, nil
	h := serve.New(cfg)
	for _, target := range []string{"/_largo/healthz", "/_largo/readyz", "/_largo/metrics", "/_largo/nothing", "/.nothing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
}
