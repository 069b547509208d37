package s3api

import (
	"encoding/xml"
	"net/http"
	"time"
)

// A Complete may take long: the parts that were not hashed in order are
// hashed, parts of other sizes are joined, a bucket completes its own
// multipart upload (versitygw concatenates the parts). S3 answers such a
// request 200 at once and sends a space now and then, so that the
// client's read timeout does not cut it, and ends the answer with the
// result or with an Error document, which the clients (botocore, the Go
// SDK, minio-go) read in a 200 of CompleteMultipartUpload as the error it
// is. A Complete that ends within the first interval is answered as any
// request.

// keepAliveEvery is how often a long Complete sends a space.
const keepAliveEvery = 10 * time.Second

// keepAlive sends the spaces of a long answer. It alone writes to its
// ResponseWriter until end.
type keepAlive struct {
	w       http.ResponseWriter
	every   time.Duration
	started bool // the 200 is sent; read by end once done is closed
	stop    chan struct{}
	done    chan struct{}
}

// startKeepAlive sends a space on w every interval, the 200 before the
// first, until end.
func startKeepAlive(w http.ResponseWriter, every time.Duration) *keepAlive {
	k := &keepAlive{w: w, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k
}

func (k *keepAlive) run() {
	defer close(k.done)
	t := time.NewTicker(k.every)
	defer t.Stop()
	rc := http.NewResponseController(k.w)
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if !k.started {
			k.w.Header().Set("Content-Type", "application/xml")
			k.w.WriteHeader(http.StatusOK)
			k.w.Write([]byte(xml.Header))
			k.started = true
		}
		if _, err := k.w.Write([]byte(" ")); err != nil {
			return // the client is gone; the work goes on
		}
		rc.Flush()
	}
}

// end stops the spaces and answers v, or err: as a whole answer when
// none was begun (err is then returned, for the handler to answer), else
// as the end of the 200's body (err is logged by log).
func (k *keepAlive) end(r *http.Request, v any, err error, log func(error)) error {
	close(k.stop)
	<-k.done
	if !k.started {
		if err != nil {
			return err
		}
		return writeXML(k.w, http.StatusOK, v)
	}
	if err != nil {
		log(err)
		e := toError(err)
		v = errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: k.w.Header().Get(requestIDHeader)}
	}
	b, _ := xml.Marshal(v)
	k.w.Write(b)
	return nil
}
