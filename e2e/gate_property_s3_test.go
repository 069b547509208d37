//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The S3 API in the gate's property test: its requests go through the
// same gate and pipeline as the file tree's, so the same model judges
// them. A user signs with its S3 key; anonymous sends no signature; a
// share link's holder speaks no S3, and is anonymous there.

// propS3Keys are the S3 keys of the random access files' users.
var propS3Keys = map[string]s3Key{
	"u1": {"LKPROPU1000000000001", "u1-s3-secret-0123456789-abcdefghijklmnop"},
	"u2": {"LKPROPU2000000000002", "u2-s3-secret-0123456789-abcdefghijklmnop"},
}

// s3Kinds are the request kinds of the S3 API, after the file tree's.
const (
	s3First      = 21
	s3Get        = 21
	s3List       = 22
	s3Put        = 23
	s3Delete     = 24
	s3Copy       = 25
	s3Multipart  = 26
	s3KindsAfter = 27 // the kinds of step, S3's included
)

// s3Send sends an S3 request for key (query appended) as p: signed with
// its user's key, or unsigned.
func (w *prop) s3Send(p *principal, method, key, query string, body []byte, hdr ...string) (*http.Response, string) {
	u := w.s.S3 + "largo/" + keyPath(key)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if k, ok := propS3Keys[p.user]; ok {
		sum := sha256.Sum256(body)
		payload := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", payload)
		signRequest(w.t, req, payload, k, time.Now())
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// s3Step sends one S3 request of kind k as p.
func (w *prop) s3Step(i int, p *principal, k int) (resp *http.Response, body, desc string) {
	switch k {
	case s3Get:
		name := w.pickFor(p, pRead, w.names)
		desc = "S3 GetObject " + name
		resp, body = w.s3Send(p, "GET", name, "", nil)
	case s3List:
		dir := w.pick(w.folder)
		prefix := dir
		if prefix != "" {
			prefix += "/"
		}
		q := "list-type=2&prefix=" + strings.ReplaceAll(keyPath(prefix), "/", "%2F")
		if w.rng.IntN(2) == 0 {
			q += "&delimiter=%2F"
		}
		desc = "S3 ListObjectsV2 " + q
		resp, body = w.s3Send(p, "GET", "", q, nil)
		var res struct {
			Contents []struct{ Key string }
		}
		xml.Unmarshal([]byte(body), &res)
		var keys []string
		for _, c := range res.Contents {
			keys = append(keys, strings.TrimPrefix(c.Key, prefix))
		}
		w.namesMay(i, p, desc, resp, dir, keys, pRead)
	case s3Put:
		name := w.pickFor(p, pWrite, append(w.names, w.newName()))
		desc = "S3 PutObject " + name
		resp, body = w.s3Send(p, "PUT", name, "", []byte(w.secret()))
	case s3Delete:
		name := w.pickFor(p, pDelete, w.names)
		desc = "S3 DeleteObject " + name
		resp, body = w.s3Send(p, "DELETE", name, "", nil)
	case s3Copy:
		from, to := w.pickFor(p, pRead, w.names), w.pickFor(p, pWrite, append(w.names, w.newName()))
		desc = "S3 CopyObject " + from + " -> " + to
		resp, body = w.s3Send(p, "PUT", to, "", nil, "X-Amz-Copy-Source", "/largo/"+keyPath(from))
	case s3Multipart:
		name := w.pickFor(p, pWrite, append(w.names, w.newName()))
		desc = "S3 multipart upload " + name
		resp, body = w.s3Send(p, "POST", name, "uploads", nil)
		if resp.StatusCode != 200 {
			return resp, body, desc
		}
		var created struct{ UploadId string }
		xml.Unmarshal([]byte(body), &created)
		q := "uploadId=" + created.UploadId
		resp, body = w.s3Send(p, "PUT", name, "partNumber=1&"+q, []byte(w.secret()))
		if resp.StatusCode != 200 {
			return resp, body, desc
		}
		doc := fmt.Sprintf("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>", resp.Header.Get("ETag"))
		resp, body = w.s3Send(p, "POST", name, q, []byte(doc))
	}
	return resp, body, desc
}
