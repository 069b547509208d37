package serve

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"largo"
	"largo/gate"
	"largo/links"
	"largo/wire"
)

// A drop box takes tus uploads too, so that a stranger's browser sends
// large files as the folder page does: resumable, in pieces over several
// connections. Only their creation goes through the link, a POST to the
// link's URL followed by dropUploads (/_largo/s/TOKEN/_largo/uploads/),
// which is made for the link's holder at the tus endpoint: each partial
// upload, and the final one that joins them. An upload so made is the
// link's (package resumable): its URL, which only the page that made it
// is given, reaches it from then on without the link, and it is placed,
// when its last byte arrives, with the link's rights of that moment (a
// link revoked or expired meanwhile places nothing). Its metadata's
// folder is read within the link's folder, as the link's URLs are: the
// page never learns where the link's folder is, and a folder below it is
// refused as the gate refuses every write below a drop box's folder.

// dropUploads is the path, below a share link's URL, of the tus endpoint
// a drop box takes uploads at.
var dropUploads = strings.TrimPrefix(ResumablePrefix, "/")

// errDropMetadata refuses a creation through a drop box whose folder is
// no name.
var errDropMetadata = wire.Refuse(http.StatusBadRequest, "the folder metadata of an upload through a drop box must be a folder within it")

// dropUpload returns a tus creation through the drop box l (whose token
// is token) as a request of the link's holder to the tus endpoint, its
// metadata's folder read within the link's folder.
func dropUpload(r *http.Request, token string, l *links.Link) (*http.Request, error) {
	meta, err := rebaseFolder(r.Header.Get("Upload-Metadata"), l.Path)
	if err != nil {
		return r, err
	}
	v := &linkView{Base: links.URLPrefix + token + "/", Root: l.Path, Link: l, Uploads: true}
	ctx := context.WithValue(gate.With(r.Context(), gate.LinkHolder(l.ID)), linkViewKey{}, v)
	r2 := r.WithContext(ctx)
	u := *r.URL
	u.Path, u.RawPath = ResumablePrefix, ""
	r2.URL = &u
	r2.Header = r.Header.Clone()
	r2.Header.Set("Upload-Metadata", meta)
	return r2, nil
}

// rebaseFolder returns tus Upload-Metadata (comma-separated pairs of a
// key and its value in base64) with its folder read within root: the
// folder value joined to root, or root when it names none.
func rebaseFolder(meta, root string) (string, error) {
	var pairs []string
	folder := ""
	for pair := range strings.SplitSeq(meta, ",") {
		pair = strings.TrimSpace(pair)
		key, value, _ := strings.Cut(pair, " ")
		if key != "folder" {
			if pair != "" {
				pairs = append(pairs, pair)
			}
			continue
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
		if err != nil {
			return "", errDropMetadata
		}
		if folder, err = largo.ParseName("/" + strings.Trim(string(b), "/")); err != nil {
			return "", errDropMetadata
		}
	}
	name := root
	if folder != "" {
		name = largo.Join(root, folder)
	}
	if name != "" {
		pairs = append(pairs, "folder "+base64.StdEncoding.EncodeToString([]byte(name)))
	}
	return strings.Join(pairs, ","), nil
}
