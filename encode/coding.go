// Package encode is largo's compression policy: it decides, per response,
// whether a file goes out as it is stored or compressed, and it holds the
// machinery that compression needs.
//
//   - Which data: Compressible says yes to text and to the structured text
//     formats (JSON, NDJSON, JavaScript, CSS, SVG, XML, CSV, logs, WASM and
//     uncompressed fonts) and no to everything else, in particular to data
//     that is already compressed (archives, images, audio, video, PDF),
//     where compression would spend CPU to send more bytes. Files under
//     MinSize are never compressed.
//   - Which coding: ParseAccept reads the client's Accept-Encoding with its
//     q-values; Accept.Rank orders the codings the client takes (zstd, br,
//     gzip), ties broken in that order. No header means identity.
//   - Precompressed sidecars: Sidecar names NAME.zst, NAME.br and NAME.gz
//     beside NAME; SidecarBase recognises them. Serving them is the
//     caller's job (a sidecar is a file like any other, sent with sendfile).
//   - Dynamic compression: Encoders pools the encoders of one Level and
//     bounds the number of responses compressing at once; Response is the
//     http.ResponseWriter that streams a body through one of them.
//
// Choose applies the rules in order. Two of them are choices the obvious
// reading of "compress text, never for ranges" leaves open, and why:
//   - A sidecar answers a Range request when If-Range names the sidecar's
//     ETag. Without that tie the offsets may be offsets into the decoded
//     file (a client that decodes as it saves, then resumes), so identity
//     is the only safe answer; with it the client says it holds a part of
//     that very encoded file, and sidecars can be resumed like any file.
//   - Sidecars are used only for types the policy compresses. A file.img
//     beside a file.img.zst is more likely two downloads than one file and
//     its sidecar, and serving the wrong one as Content-Encoding would hand
//     clients corrupt data.
//
// The package knows nothing of stores or of largo's routing: it is used by
// package serve (responses) and by package precompress (sidecars in a store).
package encode

import (
	"fmt"
	"strings"

	"largo"
)

// Coding is a content coding, as named in Accept-Encoding and
// Content-Encoding.
type Coding string

// The codings largo produces, and identity (no coding).
const (
	Identity Coding = "identity"
	Zstd     Coding = "zstd"
	Brotli   Coding = "br"
	Gzip     Coding = "gzip"
)

// Codings are the codings largo produces, in its order of preference when
// a client accepts several equally: zstd compresses about as well as
// brotli at a fraction of the CPU on both ends, and gzip is the fallback
// every client knows.
var Codings = [...]Coding{Zstd, Brotli, Gzip}

// Ext returns the file extension of a coding's sidecar (".zst", ".br",
// ".gz"), or "" for identity and unknown codings.
func (c Coding) Ext() string {
	switch c {
	case Zstd:
		return ".zst"
	case Brotli:
		return ".br"
	case Gzip:
		return ".gz"
	}
	return ""
}

// index is the position of c in Codings, or -1.
func (c Coding) index() int {
	for i, k := range Codings {
		if k == c {
			return i
		}
	}
	return -1
}

// Sidecar returns the name of the precompressed sidecar of name in coding
// c: name with the coding's extension appended ("app.js" -> "app.js.br").
func Sidecar(name string, c Coding) string { return name + c.Ext() }

// SidecarBase reports whether name has the form of a sidecar, and if so
// returns the name of the file it would be the sidecar of and its coding:
// largo.SidecarBase, the one definition of a sidecar's name, with the
// extension read as a coding. Whether it is one depends on that file
// existing, which the caller checks: a lone backup.tar.gz is a file like
// any other.
func SidecarBase(name string) (base string, c Coding, ok bool) {
	base, ext, ok := largo.SidecarBase(name)
	if !ok {
		return "", "", false
	}
	for _, k := range Codings {
		if k.Ext() == ext {
			return base, k, true
		}
	}
	return "", "", false
}

// Level is how hard dynamic compression works. The zero value is Fast.
type Level int

// The levels of dynamic compression. Each maps to settings of every
// coding chosen to keep a response's memory bounded (see MemoryPerStream).
const (
	// Fast: zstd's fastest level, gzip level 1, brotli quality 1. Most of
	// the saving on text for a fraction of the CPU: the default.
	Fast Level = iota
	// Default: zstd's default level, gzip level 6, brotli quality 4.
	Default
	// Best: zstd's better-compression level, gzip level 9, brotli quality
	// 6. The highest settings that still stream at tens of MB/s per core;
	// brotli's top qualities run at about 1 MB/s and belong to precompress.
	Best
	// Max is for precompression, never for responses: zstd's best level,
	// gzip level 9 and brotli quality 11, with large windows.
	Max
)

// Levels are the names ParseLevel accepts, in order.
var Levels = []string{"fast", "default", "best"}

// ParseLevel returns the level named s: "fast", "default" or "best".
func ParseLevel(s string) (Level, error) {
	for i, n := range Levels {
		if s == n {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("compression level %q is not one of %s", s, strings.Join(Levels, ", "))
}

// String returns the level's name.
func (l Level) String() string {
	if l == Max {
		return "max"
	}
	if l >= 0 && int(l) < len(Levels) {
		return Levels[l]
	}
	return fmt.Sprintf("Level(%d)", int(l))
}
