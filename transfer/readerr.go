package transfer

import "io"

// ReadErr is a ReadSeeker that keeps the first error other than io.EOF
// its ReadSeeker returns: http.ServeContent drops the error of a read
// that fails mid-body (a store's connection lost, an object replaced
// since it was opened), and the response must then be cut rather than
// ended as if complete. It is used by one goroutine.
type ReadErr struct {
	io.ReadSeeker
	// Err is the first error of a Read other than io.EOF, nil for none.
	Err error
}

func (r *ReadErr) Read(p []byte) (int, error) {
	n, err := r.ReadSeeker.Read(p)
	if err != nil && err != io.EOF && r.Err == nil {
		r.Err = err
	}
	return n, err
}
