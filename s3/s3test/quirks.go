package s3test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// Quirks are the ways in which S3 servers other than versitygw depart
// from it where largo depends on them. A Proxy with quirks behaves as
// such a server would; the zero value forwards every request as it is.
type Quirks struct {
	// EqualParts refuses (400 InvalidPart) to complete a multipart
	// upload whose parts but the last are not all of one size.
	EqualParts bool
	// DeleteIgnoresIfMatch removes an object whatever the If-Match of
	// its DELETE.
	DeleteIgnoresIfMatch bool
	// Conditions is what becomes of If-Match and If-None-Match on
	// writes (PUT, POST, DELETE).
	Conditions Conditions
	// RacingCreates checks If-None-Match: * when a PUT (or a
	// completion) arrives rather than when it writes, so that creates of
	// one key sent at once all succeed.
	RacingCreates bool
	// NoTrailers refuses (501 NotImplemented) a body that carries a
	// checksum trailer (aws-chunked, x-amz-trailer).
	NoTrailers bool
	// PathEncodedKeys encodes the keys and prefixes of a listing asked
	// for with encoding-type=url as a URL's path is (%20 for a space, a
	// plus left as it is) rather than as a form is (AWS's: a plus for a
	// space, %2B for a plus).
	PathEncodedKeys bool
	// RepeatedPrefixes repeats, at the head of a listing's next page,
	// the last common prefix of the page before.
	RepeatedPrefixes bool
	// UnquotedETags sends ETags without their quotes, in headers and in
	// XML answers, and takes them with or without in conditions.
	UnquotedETags bool
	// NoPartCopy refuses (501 NotImplemented) UploadPartCopy.
	NoPartCopy bool
	// GoneIfMatch answers 412 PreconditionFailed, rather than 404 or 204,
	// to a DELETE with If-Match of a key that does not exist.
	GoneIfMatch bool
}

// Conditions is what a server does with the conditions of writes.
type Conditions int

// The servers' ways with conditional writes.
const (
	// ConditionsApplied applies them, as versitygw does.
	ConditionsApplied Conditions = iota
	// ConditionsRefused answers 501 NotImplemented to a write that has
	// one.
	ConditionsRefused
	// ConditionsIgnored writes as if there were none.
	ConditionsIgnored
)

// Gap returns the words in which largo's start-up probe names what a
// server with q lacks of conditional writes (the lack that keeps a
// bucket to one instance), "" when it lacks nothing.
func (q Quirks) Gap() string {
	switch {
	case q.Conditions == ConditionsRefused:
		return "refuses If-None-Match and If-Match on writes (501)"
	case q.Conditions == ConditionsIgnored:
		return "ignores If-None-Match: * on PUT"
	case q.DeleteIgnoresIfMatch:
		return "ignores If-Match on DELETE"
	case q.RacingCreates:
		return "creates of one key with If-None-Match: * sent at once succeed"
	}
	return ""
}

// Engine is a row of the compatibility matrix: the quirks of a kind of
// S3 server, and the servers that have them (with the public source).
type Engine struct {
	// Name names the row, as a subtest's name.
	Name string
	// Like says which servers behave so, and where that is told.
	Like string
	// Quirks are what the proxy does.
	Quirks Quirks
}

// Engines returns the rows of the compatibility matrix, one quirk each.
func Engines() []Engine {
	return []Engine{
		{"EqualParts", "Cloudflare R2 (every part but the last of one size)", Quirks{EqualParts: true}},
		{"DeleteIgnoresIfMatch", "MinIO's community server (minio#21677)", Quirks{DeleteIgnoresIfMatch: true}},
		{"ConditionsRefused", "Garage v2 (no conditional writes), answering 501", Quirks{Conditions: ConditionsRefused}},
		{"ConditionsIgnored", "Garage v2 (no conditional writes), ignoring them", Quirks{Conditions: ConditionsIgnored}},
		{"RacingCreates", "SeaweedFS 4.16 (seaweedfs#8800)", Quirks{RacingCreates: true}},
		{"NoTrailers", "Cloudflare R2 in early 2025 (aws-sdk-js-v3#6810), gateways", Quirks{NoTrailers: true}},
		{"ListingEncodings", "servers that encode keys as paths and repeat common prefixes across pages", Quirks{PathEncodedKeys: true, RepeatedPrefixes: true}},
		{"UnquotedETags", "servers that send ETags without quotes", Quirks{UnquotedETags: true}},
		{"NoPartCopy", "gateways without UploadPartCopy", Quirks{NoPartCopy: true}},
		{"GoneIfMatch", "SeaweedFS 4.53 (412 to a conditional DELETE of a missing key)", Quirks{GoneIfMatch: true}},
	}
}

// resignHeader marks a request the quirks changed, to sign again.
const resignHeader = "X-Largo-Test-Resign"

// raceWindow is how long a create of a key with RacingCreates waits for
// another create of the same key before it goes on alone.
const raceWindow = 250 * time.Millisecond

// intercept applies the quirks to r: it answers it (true), or changes it
// for forwarding (false).
func (p *Proxy) intercept(w http.ResponseWriter, r *http.Request) bool {
	q := p.quirks
	bucket, key := splitPath(r.URL.Path)
	query := r.URL.Query()
	write := r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
	conditional := r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != ""
	switch {
	case q.NoTrailers && (r.Header.Get("X-Amz-Trailer") != "" || strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-UNSIGNED-PAYLOAD-TRAILER")):
		refuse(w, r, http.StatusNotImplemented, "NotImplemented", fmt.Sprintf("Header 'x-amz-trailer' with value '%s' not implemented", r.Header.Get("X-Amz-Trailer")))
		return true
	case q.NoPartCopy && r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" && query.Has("uploadId"):
		refuse(w, r, http.StatusNotImplemented, "NotImplemented", "UploadPartCopy is not implemented")
		return true
	case write && conditional && q.Conditions == ConditionsRefused:
		refuse(w, r, http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented")
		return true
	case write && conditional && q.Conditions == ConditionsIgnored:
		drop(r, "If-Match", "If-None-Match")
	case r.Method == http.MethodDelete && q.DeleteIgnoresIfMatch:
		drop(r, "If-Match")
	case r.Method == http.MethodDelete && q.GoneIfMatch && r.Header.Get("If-Match") != "" && !p.exists(bucket, key):
		refuse(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		return true
	}
	if q.UnquotedETags {
		for _, h := range []string{"If-Match", "If-None-Match", "X-Amz-Copy-Source-If-Match", "X-Amz-Copy-Source-If-None-Match"} {
			if v := r.Header.Get(h); v != "" && v != "*" && !strings.HasPrefix(v, `"`) {
				r.Header.Set(h, `"`+v+`"`)
				r.Header.Set(resignHeader, "1")
			}
		}
	}
	completion := r.Method == http.MethodPost && query.Has("uploadId")
	if q.EqualParts && completion {
		if msg := p.unequalParts(r, bucket, key, query.Get("uploadId")); msg != "" {
			refuse(w, r, http.StatusBadRequest, "InvalidPart", msg)
			return true
		}
	}
	if q.RacingCreates && (r.Method == http.MethodPut || completion) && r.Header.Get("If-None-Match") == "*" {
		if p.exists(bucket, key) {
			refuse(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
			return true
		}
		p.together(bucket + "/" + key)
		drop(r, "If-None-Match")
	}
	return false
}

// splitPath returns the bucket and the key of a path-style request's path.
func splitPath(path string) (bucket, key string) {
	bucket, key, _ = strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return bucket, key
}

// drop removes the headers from r, which is then signed again.
func drop(r *http.Request, headers ...string) {
	for _, h := range headers {
		if r.Header.Get(h) != "" {
			r.Header.Del(h)
			r.Header.Set(resignHeader, "1")
		}
	}
}

// edited reports whether the quirks changed r.
func edited(r *http.Request) bool { return r.Header.Get(resignHeader) != "" }

// sign signs r again with the server's root credentials, for the
// payload its client announced.
func (p *Proxy) sign(r *http.Request) {
	r.Header.Del(resignHeader)
	r.Header.Del("Authorization")
	hash := r.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		hash = "UNSIGNED-PAYLOAD"
		r.Header.Set("X-Amz-Content-Sha256", hash)
	}
	creds := aws.Credentials{AccessKeyID: p.srv.AccessKey, SecretAccessKey: p.srv.SecretKey}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), creds, r, hash, "s3", p.srv.Region, time.Now()); err != nil {
		r.Header.Set("Authorization", "unsigned: "+err.Error())
	}
}

// refuse answers r with an S3 error, after reading what little body it
// has, as a server does.
func refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	io.CopyN(io.Discard, r.Body, 1<<20)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, html.EscapeString(msg))
}

// exists reports whether the bucket holds key.
func (p *Proxy) exists(bucket, key string) bool {
	_, err := p.srv.Client.HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: &bucket, Key: &key})
	return err == nil
}

// together holds a create of k until another create of k arrives (which
// releases both) or raceWindow passes: creates sent at once have all
// passed the check before any of them writes.
func (p *Proxy) together(k string) {
	p.mu.Lock()
	if first, ok := p.creates[k]; ok {
		delete(p.creates, k)
		close(first)
		p.mu.Unlock()
		return
	}
	mine := make(chan struct{})
	p.creates[k] = mine
	p.mu.Unlock()
	t := time.NewTimer(raceWindow)
	defer t.Stop()
	select {
	case <-mine:
	case <-t.C:
		p.mu.Lock()
		if p.creates[k] == mine {
			delete(p.creates, k)
		}
		p.mu.Unlock()
	}
}

// unequalParts returns why the completion r of upload id may not be made
// on a server that takes parts of one size only, "" when it may. r's
// body is read and put back.
func (p *Proxy) unequalParts(r *http.Request, bucket, key, id string) string {
	b, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return "unreadable request: " + err.Error()
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var done struct {
		Parts []struct {
			Number int32 `xml:"PartNumber"`
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(b, &done); err != nil {
		return "malformed XML"
	}
	sizes := map[int32]int64{}
	pages := awss3.NewListPartsPaginator(p.srv.Client, &awss3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &id})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			return "" // the server's own answer will say
		}
		for _, part := range page.Parts {
			sizes[aws.ToInt32(part.PartNumber)] = aws.ToInt64(part.Size)
		}
	}
	for i := 1; i < len(done.Parts)-1; i++ {
		if sizes[done.Parts[i].Number] != sizes[done.Parts[0].Number] {
			return "All non-trailing parts must have the same length."
		}
	}
	return ""
}

// The elements of XML answers that the quirks rewrite.
var (
	etagElem   = regexp.MustCompile(`<ETag>(?:&#34;|&quot;|")(.*?)(?:&#34;|&quot;|")</ETag>`)
	keyElem    = regexp.MustCompile(`<(Key|Prefix|StartAfter)>(.*?)</(?:Key|Prefix|StartAfter)>`)
	prefixElem = regexp.MustCompile(`<CommonPrefixes><Prefix>(.*?)</Prefix></CommonPrefixes>`)
	nextElem   = regexp.MustCompile(`<NextContinuationToken>(.*?)</NextContinuationToken>`)
	encElem    = regexp.MustCompile(`<EncodingType>[^<]*</EncodingType>`)
)

// answer applies the quirks to the server's answer to a forwarded
// request.
func (p *Proxy) answer(resp *http.Response) error {
	q := p.quirks
	if q.UnquotedETags {
		if e := resp.Header.Get("ETag"); e != "" {
			resp.Header.Set("ETag", strings.Trim(e, `"`))
		}
	}
	r := resp.Request
	_, key := splitPath(r.URL.Path)
	query := r.URL.Query()
	listing := r.Method == http.MethodGet && key == "" && query.Get("list-type") == "2"
	xmlAnswer := listing ||
		r.Method == http.MethodPost && query.Has("uploadId") ||
		r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" ||
		r.Method == http.MethodGet && query.Has("uploadId")
	if resp.StatusCode != http.StatusOK || !xmlAnswer || !q.UnquotedETags && !(listing && (q.PathEncodedKeys || q.RepeatedPrefixes)) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if q.UnquotedETags {
		b = etagElem.ReplaceAll(b, []byte("<ETag>$1</ETag>"))
	}
	if listing && q.RepeatedPrefixes {
		b = p.repeatPrefix(b, query.Get("continuation-token"))
	}
	if listing && q.PathEncodedKeys && query.Get("encoding-type") == "url" {
		b = keyElem.ReplaceAllFunc(b, func(m []byte) []byte {
			sub := keyElem.FindSubmatch(m)
			return []byte("<" + string(sub[1]) + ">" + pathEncode(html.UnescapeString(string(sub[2]))) + "</" + string(sub[1]) + ">")
		})
		if loc := encElem.FindIndex(b); loc != nil {
			b = append(b[:loc[0]:loc[0]], append([]byte("<EncodingType>url</EncodingType>"), b[loc[1]:]...)...)
		} else {
			b = bytes.Replace(b, []byte("</ListBucketResult>"), []byte("<EncodingType>url</EncodingType></ListBucketResult>"), 1)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// repeatPrefix puts at the head of the listing page b, continued from
// token, the last common prefix of the page before, and remembers this
// page's for the next.
func (p *Proxy) repeatPrefix(b []byte, token string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, repeat := p.pages[token]
	if all := prefixElem.FindAllSubmatch(b, -1); len(all) > 0 {
		if next := nextElem.FindSubmatch(b); next != nil {
			p.pages[html.UnescapeString(string(next[1]))] = string(all[len(all)-1][1])
		}
	}
	if !repeat || token == "" {
		return b
	}
	elem := []byte("<CommonPrefixes><Prefix>" + prev + "</Prefix></CommonPrefixes>")
	if i := bytes.Index(b, []byte("<CommonPrefixes>")); i >= 0 {
		return append(b[:i:i], append(elem, b[i:]...)...)
	}
	return bytes.Replace(b, []byte("</ListBucketResult>"), append(elem, []byte("</ListBucketResult>")...), 1)
}

// pathEncode percent-encodes s as a URL's path is: every byte but the
// unreserved ones, the slash and the plus.
func pathEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~', c == '/', c == '+':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
