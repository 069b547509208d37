package encode

import "testing"

func TestCompressible(t *testing.T) {
	for mt, want := range map[string]bool{
		"text/plain; charset=utf-8":      true,
		"text/html":                      true,
		"TEXT/CSS":                       true,
		"text/csv; charset=utf-8":        true,
		"text/javascript":                true,
		"application/javascript":         true,
		"application/json":               true,
		"application/ld+json":            true,
		"application/x-ndjson":           true,
		"application/jsonl":              true,
		"application/xml":                true,
		"application/atom+xml":           true,
		"image/svg+xml":                  true,
		"application/wasm":               true,
		"font/ttf":                       true,
		"":                               false,
		"application/octet-stream":       false,
		"application/zip":                false,
		"application/gzip":               false,
		"application/zstd":               false,
		"application/x-xz":               false,
		"application/x-7z-compressed":    false,
		"application/vnd.rar":            false,
		"image/png":                      false,
		"image/jpeg":                     false,
		"image/webp":                     false,
		"audio/mpeg":                     false,
		"video/mp4":                      false,
		"font/woff2":                     false,
		"application/pdf":                false,
		"application/vnd.apache.parquet": false,
	} {
		if got := Compressible(mt); got != want {
			t.Errorf("Compressible(%q) = %v", mt, got)
		}
	}
}

// TestChoose covers the policy's rules; the full matrix over HTTP, with
// real sidecars, headers and bodies, is serve's TestCompressMatrix.
func TestChoose(t *testing.T) {
	sidecars := func(have ...Coding) func(Coding) (string, bool) {
		return func(c Coding) (string, bool) {
			for _, h := range have {
				if h == c {
					return `"side-` + string(c) + `"`, true
				}
			}
			return "", false
		}
	}
	all := ParseAccept([]string{"gzip, br, zstd"})
	tests := []struct {
		name string
		req  Request
		o    Offer
		want Choice
	}{
		{"incompressible", Request{Accept: all}, Offer{MediaType: "video/mp4", Size: 1 << 20, Dynamic: true}, Choice{Coding: Identity}},
		{"too small", Request{Accept: all}, Offer{MediaType: "text/plain", Size: MinSize - 1, Dynamic: true}, Choice{Coding: Identity}},
		{"smallest compressed", Request{Accept: all}, Offer{MediaType: "text/plain", Size: MinSize, Dynamic: true}, Choice{Coding: Zstd, Vary: true}},
		{"no header", Request{Accept: ParseAccept(nil)}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip)}, Choice{Coding: Identity, Vary: true}},
		{"dynamic off", Request{Accept: all}, Offer{MediaType: "text/plain", Size: 5000}, Choice{Coding: Identity, Vary: true}},
		{"sidecar beats dynamic", Request{Accept: all}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip)}, Choice{Coding: Gzip, Sidecar: true, Vary: true}},
		{"client order among sidecars", Request{Accept: ParseAccept([]string{"gzip, br;q=0.9"})}, Offer{MediaType: "text/plain", Size: 5000, Sidecar: sidecars(Gzip, Brotli)}, Choice{Coding: Gzip, Sidecar: true, Vary: true}},
		{"sidecar not accepted", Request{Accept: ParseAccept([]string{"br"})}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip)}, Choice{Coding: Brotli, Vary: true}},
		{"range: identity", Request{Accept: all, Range: true}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip)}, Choice{Coding: Identity, Vary: true}},
		{"range tied to sidecar", Request{Accept: all, Range: true, IfRange: `"side-gzip"`}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip, Zstd)}, Choice{Coding: Gzip, Sidecar: true, Vary: true}},
		{"range tied to another etag", Request{Accept: all, Range: true, IfRange: `"other"`}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true, Sidecar: sidecars(Gzip)}, Choice{Coding: Identity, Vary: true}},
		{"range tied to unaccepted sidecar", Request{Accept: ParseAccept([]string{"br"}), Range: true, IfRange: `"side-gzip"`}, Offer{MediaType: "text/plain", Size: 5000, Sidecar: sidecars(Gzip)}, Choice{Coding: Identity, Vary: true}},
		{"identity refused, nothing else", Request{Accept: ParseAccept([]string{"identity;q=0"})}, Offer{MediaType: "text/plain", Size: 5000, Dynamic: true}, Choice{Coding: Identity, Vary: true}},
	}
	for _, tt := range tests {
		if got := Choose(tt.req, tt.o); got != tt.want {
			t.Errorf("%s: %+v; want %+v", tt.name, got, tt.want)
		}
	}
}

func TestChooseLooksUpOnlyWhatItUses(t *testing.T) {
	var asked []Coding
	o := Offer{MediaType: "text/plain", Size: 5000, Sidecar: func(c Coding) (string, bool) { asked = append(asked, c); return `"x"`, c == Brotli }}
	Choose(Request{Accept: ParseAccept([]string{"gzip;q=0.5, br, zstd"})}, o)
	if len(asked) != 2 || asked[0] != Zstd || asked[1] != Brotli {
		t.Errorf("looked up %v; want zstd then br", asked)
	}
	asked = nil
	Choose(Request{Accept: ParseAccept([]string{"gzip"}), Range: true}, o)
	Choose(Request{Accept: ParseAccept([]string{"gzip"})}, Offer{MediaType: "image/png", Size: 5000, Sidecar: o.Sidecar})
	if len(asked) != 0 {
		t.Errorf("looked up sidecars %v for a range without If-Range or an incompressible type", asked)
	}
}
