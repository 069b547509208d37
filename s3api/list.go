package s3api

import (
	"context"
	"encoding/base64"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"largo"
	"largo/gate"
	"largo/listing"
)

// Listings are made of the store's folders, each listed through the
// gate (so that hidden names and what the principal may not see never
// appear) and sorted by package listing in bounded memory, in S3's order:
// byte by byte over the whole key, a folder's entries ordered as their
// keys are, a folder as its name and a slash. With the delimiter "/" a
// listing is one folder's entries, its folders as common prefixes;
// without, a walk of the folders below the prefix in key order, one open
// folder per level; with another delimiter, that walk with the keys that
// share a common prefix given as one. A page resumes after the last key
// it returned (the continuation token, the marker, start-after): each
// folder on the way down keeps only what sorts after it.

// maxKeys is the most keys of one page.
const maxKeys = 1000

// entry is a key of a listing: a file's, or a folder's as a common
// prefix (with its slash).
type entry struct {
	key    string
	prefix bool
	in     largo.Info
}

// listBuckets answers ListBuckets: the one bucket.
func (h *Handler) listBuckets(w http.ResponseWriter, r *http.Request) error {
	created := time.Unix(0, 0)
	if in, err := h.cfg.Store.Stat(r.Context(), ""); err == nil && !in.ModTime.IsZero() {
		created = in.ModTime // the root's, when the principal may look at it
	}
	p, _ := gate.From(r.Context())
	return writeXML(w, http.StatusOK, listAllMyBucketsResult{
		Xmlns:   xmlns,
		Owner:   ownerOf(p),
		Buckets: []bucket{{Name: h.cfg.Bucket, CreationDate: s3Time(created)}},
	})
}

// ownerOf is the owner S3 documents name for a principal.
func ownerOf(p gate.Principal) owner {
	name := p.UserName()
	if name == "" {
		name = "anonymous"
	}
	return owner{ID: name, DisplayName: name}
}

// list answers ListObjectsV2 (list-type=2) and ListObjects.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	v2 := q.Get("list-type") == "2"
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	max, err := count(q, "max-keys", maxKeys, maxKeys)
	if err != nil {
		return err
	}
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		return errEncodingType
	}
	res := listBucketResult{Xmlns: xmlns, Name: h.cfg.Bucket, Prefix: prefix, MaxKeys: max, Delimiter: delim, EncodingType: enc}
	after := ""
	if v2 {
		res.StartAfter = q.Get("start-after")
		after = res.StartAfter
		if tok := q.Get("continuation-token"); tok != "" {
			k, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil || !utf8.Valid(k) {
				return errToken
			}
			after = max2(after, string(k))
		}
		if tok, ok := q["continuation-token"]; ok {
			res.ContinuationToken = &tok[0] // echoed, even empty
		}
	} else {
		m := q.Get("marker")
		res.Marker = &m
		after = m
	}
	p, _ := gate.From(r.Context())
	fetchOwner := !v2 || q.Get("fetch-owner") == "true"
	var last, group string
	for e, err := range h.entries(r.Context(), prefix, delim == "/", after) {
		if err != nil {
			return err
		}
		if delim != "" && delim != "/" {
			// Keys that share a common prefix follow one another in
			// key order: the first stands for them all, and a page
			// that ended on it (after) has given it already.
			cp := commonPrefixOf(e.key, prefix, delim)
			if cp != "" && (cp == group || cp == after) {
				continue
			}
			if group = cp; cp != "" {
				e = entry{key: cp, prefix: true}
			}
		}
		if len(res.Contents)+len(res.CommonPrefixes) == max {
			res.IsTruncated = max > 0
			break
		}
		last = e.key
		if e.prefix {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encodeKey(e.key, enc)})
			continue
		}
		o := object{Key: encodeKey(e.key, enc), LastModified: s3Time(e.in.ModTime), ETag: e.in.ETag, Size: e.in.Size, StorageClass: "STANDARD"}
		if fetchOwner {
			own := ownerOf(p)
			o.Owner = &own
		}
		res.Contents = append(res.Contents, o)
	}
	if res.IsTruncated {
		if v2 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
		} else {
			res.NextMarker = encodeKey(last, enc)
		}
	}
	if v2 {
		n := len(res.Contents) + len(res.CommonPrefixes)
		res.KeyCount = &n
	}
	if v2 {
		// ListObjects answers its prefix as it was asked (the SDKs do
		// not decode it); ListObjectsV2 encodes it as the keys.
		res.Prefix = encodeKey(prefix, enc)
	}
	res.StartAfter = encodeKey(res.StartAfter, enc)
	if res.Marker != nil {
		m := encodeKey(*res.Marker, enc)
		res.Marker = &m
	}
	return writeXML(w, http.StatusOK, res)
}

// commonPrefixOf returns the common prefix of key in a listing of
// prefix by delim: key up to the first delim after prefix, that
// included; "" when there is none.
func commonPrefixOf(key, prefix, delim string) string {
	if !strings.HasPrefix(key, prefix) {
		return "" // not the listing's: entries gives none
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delim)]
}

// count reads the number param of q, from 0 on: def when q has none,
// limit when it is larger.
func count(q url.Values, param string, def, limit int) (int, error) {
	v := q.Get(param)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, refuse(http.StatusBadRequest, "InvalidArgument", param+" must be an integer from 0 on.")
	}
	return min(n, limit), nil
}

func max2(a, b string) string {
	if a > b {
		return a
	}
	return b
}

// encodeKey encodes a key of a listing for encoding-type=url: as a
// query's value, its slashes kept and a space as %20, which every SDK's
// decoding reads as a space (a '+' would stay a '+' in those that decode
// a path).
func encodeKey(k, enc string) string {
	if enc != "url" {
		return k
	}
	return keyEscaper.Replace(url.QueryEscape(k))
}

var keyEscaper = strings.NewReplacer("%2F", "/", "+", "%20")

// entries yields the keys that start with prefix and sort after after,
// in key order: the entries of prefix's folder as files and common
// prefixes with delim, or every file below it without.
func (h *Handler) entries(ctx context.Context, prefix string, delim bool, after string) iter.Seq2[entry, error] {
	return func(yield func(entry, error) bool) {
		if strings.HasPrefix(prefix, "/") {
			return // no key begins with a slash
		}
		dir, first := "", prefix
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			dir, first = prefix[:i], prefix[i+1:]
		}
		if dir != "" {
			if n, err := largo.ParseName("/" + dir); err != nil || n != dir {
				return // no name can have it: nothing is there
			}
		}
		w := walker{h: h, ctx: ctx, after: after, delim: delim, yield: yield}
		w.folder(dir, first, true)
	}
}

// walker walks a listing's folders.
type walker struct {
	h     *Handler
	ctx   context.Context
	after string
	delim bool
	yield func(entry, error) bool
}

// folder yields the keys of the folder dir whose entries start with
// first, and with a walk those below its folders: a folder below top
// that the principal may see but not list is passed over, as S3 passes
// over what a principal may not list. It reports false when the walk is
// to end.
func (w *walker) folder(dir, first string, top bool) bool {
	base := dir
	if base != "" {
		base += "/"
	}
	keep := func(in largo.Info) bool {
		if !strings.HasPrefix(in.Name, first) || !validKey(in.Name) {
			return false
		}
		k := base + in.Name
		if in.IsDir {
			return w.delim && (k+"/" > w.after || strings.HasPrefix(w.after, k+"/") && w.after != k+"/") ||
				!w.delim && !in.Link && (k+"/" > w.after || strings.HasPrefix(w.after, k+"/"))
		}
		return k > w.after
	}
	s, err := w.h.listingConfig().List(w.ctx, w.h.cfg.Store, dir, listing.Compare(byKey), keep)
	switch {
	case errors.Is(err, largo.ErrNotFound) || errors.Is(err, largo.ErrNotDir):
		return true // nothing there
	case !top && (errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized)):
		return true
	case err != nil:
		w.yield(entry{}, err)
		return false
	}
	defer s.Close()
	for in, err := range s.All() {
		if err != nil {
			w.yield(entry{}, err)
			return false
		}
		k := base + in.Name
		switch {
		case !in.IsDir:
			if !w.yield(entry{key: k, in: in}, nil) {
				return false
			}
		case w.delim:
			if !w.yield(entry{key: k + "/", prefix: true, in: in}, nil) {
				return false
			}
		default:
			if !w.folder(k, "", false) {
				return false
			}
		}
	}
	return true
}

// validKey reports whether a folder's entry can be a key's element in
// an XML document: a valid name's element, in UTF-8.
func validKey(elem string) bool {
	if !utf8.ValidString(elem) {
		return false
	}
	_, err := largo.ParseName("/" + elem)
	return err == nil && !strings.Contains(elem, "/")
}

// byKey orders a folder's entries as their keys sort: byte by byte, a
// folder as its name followed by a slash.
func byKey(a, b *listing.Item) int {
	la, lb := len(a.Name), len(b.Name)
	for i := 0; ; i++ {
		ca, oka := keyByte(a, i, la)
		cb, okb := keyByte(b, i, lb)
		switch {
		case !oka && !okb:
			return 0
		case !oka:
			return -1
		case !okb:
			return 1
		case ca != cb:
			return int(ca) - int(cb)
		}
	}
}

// keyByte returns the i-th byte of an entry's key within its folder.
func keyByte(it *listing.Item, i, n int) (byte, bool) {
	switch {
	case i < n:
		return it.Name[i], true
	case i == n && it.Dir:
		return '/', true
	}
	return 0, false
}

// listingConfig is the memory bound of the listings.
func (h *Handler) listingConfig() listing.Config { return h.cfg.Listing }
