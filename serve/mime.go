package serve

import (
	"mime"
	"path"
	"strings"

	"largo"
)

// mediaTypes covers the extensions of large files that system tables often
// lack or disagree on, so that the answer does not depend on the machine,
// and the common ones of the web (as Go's own table names them), so that
// the mime package, which reads the system's tables into memory the first
// time it is asked (over 600 KB held from then on), is asked only for the
// rare. Everything else falls back to the mime package, then to sniffing.
var mediaTypes = map[string]string{
	".avif": "image/avif",
	".bin":  "application/octet-stream",
	".css":  "text/css; charset=utf-8",
	".gif":  "image/gif",
	".htm":  "text/html; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".ico":  "image/vnd.microsoft.icon",
	".jpeg": "image/jpeg",
	".jpg":  "image/jpeg",
	".js":   "text/javascript; charset=utf-8",
	".json": "application/json",
	".mjs":  "text/javascript; charset=utf-8",
	".pdf":  "application/pdf",
	".png":  "image/png",
	".svg":  "image/svg+xml",
	".wav":  "audio/wav",
	".webp": "image/webp",
	".xml":  "text/xml; charset=utf-8",

	".7z":      "application/x-7z-compressed",
	".avi":     "video/x-msvideo",
	".bz2":     "application/x-bzip2",
	".csv":     "text/csv; charset=utf-8",
	".deb":     "application/vnd.debian.binary-package",
	".dmg":     "application/x-apple-diskimage",
	".flac":    "audio/flac",
	".gz":      "application/gzip",
	".img":     "application/octet-stream",
	".iso":     "application/x-iso9660-image",
	".jsonl":   "application/jsonl",
	".log":     "text/plain; charset=utf-8",
	".m4a":     "audio/mp4",
	".m4v":     "video/mp4",
	".md":      "text/markdown; charset=utf-8",
	".mkv":     "video/x-matroska",
	".mov":     "video/quicktime",
	".mp3":     "audio/mpeg",
	".mp4":     "video/mp4",
	".ndjson":  "application/x-ndjson",
	".ogg":     "audio/ogg",
	".opus":    "audio/ogg",
	".parquet": "application/vnd.apache.parquet",
	".qcow2":   "application/octet-stream",
	".rar":     "application/vnd.rar",
	".rpm":     "application/x-rpm",
	".tar":     "application/x-tar",
	".tgz":     "application/gzip",
	".txt":     "text/plain; charset=utf-8",
	".vmdk":    "application/octet-stream",
	".wasm":    "application/wasm",
	".webm":    "video/webm",
	".xz":      "application/x-xz",
	".zip":     "application/zip",
	".zst":     "application/zstd",
}

// contentType returns the media type of a file: the store's, else by
// extension, else "" so that http.ServeContent sniffs the first bytes.
//
// A generic type from the store (object stores give every object one, and
// "binary/octet-stream" or "application/octet-stream" is what they give
// when the uploader said nothing) yields to the extension's, but still
// spares the sniffing, which would cost an object store a request.
func contentType(in largo.Info) string {
	generic := in.ContentType == "application/octet-stream" || in.ContentType == "binary/octet-stream"
	if in.ContentType != "" && !generic {
		return in.ContentType
	}
	if t := byExtension(in.Name); t != "" {
		return t
	}
	if generic {
		return "application/octet-stream"
	}
	return ""
}

// byExtension returns the media type of a name's extension, or "".
func byExtension(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return ""
	}
	if t, ok := mediaTypes[ext]; ok {
		return t
	}
	return mime.TypeByExtension(ext)
}

// ContentType returns the media type largo serves the file in with: the
// store's, else by its name's extension, else "" when only its first
// bytes tell.
func ContentType(in largo.Info) string { return contentType(in) }

// MediaType returns the media type largo serves a file named name with,
// from its extension, or "" when the extension does not tell (the file's
// first bytes decide then).
func MediaType(name string) string {
	return contentType(largo.Info{Name: path.Base(name)})
}
