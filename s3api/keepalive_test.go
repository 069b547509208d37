package s3api

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"largo"
)

// TestKeepAlive: a Complete that works past the interval is answered
// 200 at once, spaces while it works, then its result; one that fails
// then ends its 200 with the Error document; one that ends at once is
// answered as any request.
func TestKeepAlive(t *testing.T) {
	for name, tc := range map[string]struct {
		long bool
		err  error
		want string
		code int
	}{
		"long":          {true, nil, "<CompleteMultipartUploadResult", 200},
		"long, failed":  {true, largo.ErrPrecondition, "<Code>PreconditionFailed</Code>", 200},
		"short":         {false, nil, "<CompleteMultipartUploadResult", 200},
		"short, failed": {false, largo.ErrPrecondition, "<Code>PreconditionFailed</Code>", 412},
	} {
		t.Run(name, func(t *testing.T) {
			spaced := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				every := time.Hour
				if tc.long {
					every = time.Millisecond
				}
				ka := startKeepAlive(w, every)
				if tc.long {
					<-spaced // the client read a space: the work goes on past it
				}
				res := completeMultipartUploadResult{Xmlns: xmlns, Bucket: "largo", Key: "k", ETag: `"e"`}
				if err := ka.end(r, res, tc.err, func(error) {}); err != nil {
					writeError(w, r, toError(err))
				}
			}))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/largo/k?uploadId=x", "application/xml", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if tc.long {
				head, err := br.ReadString(' ')
				if err != nil || !strings.HasPrefix(head, "<?xml") {
					t.Fatalf("the start of the answer: %q, %v", head, err)
				}
				close(spaced)
			}
			rest, _ := io.ReadAll(br)
			if resp.StatusCode != tc.code || !strings.Contains(string(rest), tc.want) {
				t.Errorf("%d %q; want %d with %s", resp.StatusCode, rest, tc.code, tc.want)
			}
		})
	}
}
