package main

import (
	"net/http"
	"net/http/httptest"
	"runtime/debug"
)

// settle leaves a server that is about to go idle holding what serving
// uses, and little else. Start-up runs the initialisers of every package in
// the binary (S3 and tus clients, compressors, templates) and leaves
// garbage; all of it counts as resident memory until let go. settle
//
//   - returns the garbage's pages to the system;
//   - drops the executable's pages, which start-up faulted in by the
//     megabyte (see dropStartupPages);
//   - maps the handler's code in again, by passing a few requests through
//     warm, a copy of the handler that logs and counts nothing, so that a
//     first client does not show as growth;
//   - resets the process's peak resident size (VmHWM), so that it measures
//     serving rather than start-up.
//
// The code of the connections themselves (net/http's server, sendfile) is
// mapped by the first client; that, with its buffers, is about 1.5 MiB.
func settle(warm http.Handler) {
	debug.FreeOSMemory()
	dropStartupPages()
	for _, target := range []string{"/_largo/healthz", "/_largo/readyz", "/_largo/metrics", "/", "/?format=json", "/_largo/nothing"} {
		warm.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
	debug.FreeOSMemory()
	resetPeak()
}
