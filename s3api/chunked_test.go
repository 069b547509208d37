package s3api

import (
	"io"
	"strings"
	"testing"
)

// FuzzChunked: whatever an aws-chunked body holds, the decoder ends with
// the payload or an error, never more bytes than the length announced,
// and never a payload of the wrong length without an error.
//
//	go test -run '^$' -fuzz FuzzChunked -fuzztime 60000x ./s3api
func FuzzChunked(f *testing.F) {
	f.Add("b\r\nHello world\r\n0\r\nx-amz-checksum-crc32:i9aeUg==\r\n\r\n", int64(11), true)
	f.Add(chunk1+chunk2+chunk3, int64(66560), false)
	f.Add("0\r\n\r\n", int64(0), false)
	f.Add("ffffffffffffffff\r\n", int64(5), false)
	f.Add("5;chunk-signature=zz\r\nabcde\r\n0\r\n\r\n", int64(5), false)
	sig := &signature{key: []byte("k"), date: "20130524T000000Z", scope: "20130524/us-east-1/s3/aws4_request", seed: strings.Repeat("0", 64)}
	f.Fuzz(func(t *testing.T, body string, want int64, trailer bool) {
		if want < 0 || want > 1<<20 {
			return
		}
		var names []string
		if trailer {
			names = []string{"x-amz-checksum-crc32"}
		}
		for _, s := range []*signature{nil, sig} {
			c := newChunked(strings.NewReader(body), want, s, names, s != nil && trailer)
			b, err := io.ReadAll(c)
			if int64(len(b)) > want {
				t.Fatalf("%d bytes decoded of %d announced", len(b), want)
			}
			if err == nil && int64(len(b)) != want {
				t.Fatalf("%d bytes of %d, and no error", len(b), want)
			}
		}
	})
}
