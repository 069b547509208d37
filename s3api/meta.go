package s3api

import (
	"context"
	"mime"
	"net/http"
	"path"
	"strings"

	"largo"
)

// An object's metadata is what its writer said of it and asked to keep:
// its user metadata (x-amz-meta-*) and its representation headers
// (Content-Type, Content-Disposition...). It is kept in the file's record
// (record.File.Meta), written with the version at commit and speaking
// only for that version: a file changed by other means has another ETag,
// and no metadata. A rename carries it; a copy carries it or replaces
// it (x-amz-metadata-directive).

// reprHeaders are the representation headers kept with an object and
// sent with it.
var reprHeaders = []string{"Content-Type", "Content-Disposition", "Content-Language", "Content-Encoding", "Cache-Control", "Expires"}

// Bounds of the metadata: S3's 2 KB of user metadata, and as much again
// for the representation headers.
const (
	maxUserMeta = 2 << 10
	maxMeta     = 4 << 10
)

// metaOf returns the metadata h states, keys in lower case, or nil for
// none; metadata over the bounds is refused.
func metaOf(h http.Header) (map[string]string, error) {
	var m map[string]string
	user, all := 0, 0
	add := func(k, v string) {
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
		all += len(k) + len(v)
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "x-amz-meta-") || len(vs) == 0 {
			continue
		}
		v := strings.Join(vs, ",")
		user += len(lk) - len("x-amz-meta-") + len(v)
		add(lk, v)
	}
	for _, k := range reprHeaders {
		v := h.Get(k)
		if k == "Content-Encoding" {
			v = dropAWSChunked(v)
		}
		if v != "" {
			add(strings.ToLower(k), v)
		}
	}
	if user > maxUserMeta || all > maxMeta {
		return nil, errMetaTooLarge
	}
	return m, nil
}

// dropAWSChunked returns a Content-Encoding without aws-chunked, the
// framing of the request that is no coding of the object.
func dropAWSChunked(v string) string {
	var out []string
	for c := range strings.SplitSeq(v, ",") {
		if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "aws-chunked") {
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

// metaFor returns the metadata kept for the version in of the file
// name, nil for none.
func (h *Handler) metaFor(ctx context.Context, name string, in largo.Info) map[string]string {
	if h.cfg.Files == nil || in.ETag == "" {
		return nil
	}
	rec, err := h.cfg.Files.Of(ctx, name, in.ETag)
	if err != nil {
		return nil
	}
	return rec.Meta
}

// setMeta sets on hdr the metadata m of an object and its content type:
// the one kept, else the store's, else one from the name's extension.
func setMeta(hdr http.Header, name string, in largo.Info, m map[string]string) {
	for k, v := range m {
		if strings.HasPrefix(k, "x-amz-meta-") {
			// In lower case, as S3 sends them: clients (botocore) take
			// the name as the header spells it.
			hdr[k] = []string{v}
		}
	}
	for _, k := range reprHeaders {
		if v := m[strings.ToLower(k)]; v != "" {
			hdr.Set(k, v)
		}
	}
	if hdr.Get("Content-Type") == "" {
		ct := in.ContentType
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(name))
		}
		if ct == "" {
			ct = "binary/octet-stream"
		}
		hdr.Set("Content-Type", ct)
	}
}
