package transfer

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// pieces is a source held in files one after the other, as a file held
// in slices is: its descriptor is the file at its offset, which sendfile
// sends to that file's end.
type pieces struct {
	files []*os.File
	i     int
}

// at returns the file that holds the next byte, or nil at the end.
func (p *pieces) at() *os.File {
	for ; p.i < len(p.files); p.i++ {
		f := p.files[p.i]
		off, _ := f.Seek(0, io.SeekCurrent)
		if st, _ := f.Stat(); off < st.Size() {
			return f
		}
	}
	return nil
}

func (p *pieces) Read(b []byte) (int, error) {
	f := p.at()
	if f == nil {
		return 0, io.EOF
	}
	return f.Read(b)
}

func (p *pieces) SyscallConn() (syscall.RawConn, error) {
	f := p.at()
	if f == nil {
		return nil, io.EOF
	}
	return f.SyscallConn()
}

// TestReadFromSlices sends a source of two files by sendfile, over a real
// connection: each segment that stops at a file's end is followed by the
// next, and the body arrives whole.
func TestReadFromSlices(t *testing.T) {
	f1, d1 := tempFile(t, 5<<20)
	f2, d2 := tempFile(t, 3<<20+7)
	want := append(append([]byte(nil), d1...), d2...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := NewResponse(w, Options{})
		r.Header().Set("Content-Length", strconv.Itoa(len(want)))
		src := &pieces{files: []*os.File{f1, f2}}
		if n, err := io.CopyN(r, src, int64(len(want))); err != nil {
			t.Errorf("sent %d of %d bytes: %v", n, len(want), err)
		}
		r.Finish()
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("received %d of %d bytes (%v)", len(got), len(want), err)
	}
}
