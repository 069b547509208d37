package lab

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NaiveMaxFile is the largest file the naive server will buffer: one byte
// under 2 GiB, the limit of Node.js's fs.readFile, whose refusal the
// measurements that motivate largo recorded.
const NaiveMaxFile = 2<<30 - 1

// NaiveHandler returns the deliberately naive buffered file server that
// the lab compares with: the code the measurements warn about, kept
// correct enough to be measured. A GET reads the whole file into memory
// (os.ReadFile) and writes it; it knows no ranges. A PUT collects the
// whole body (io.ReadAll) and writes it. Files of NaiveMaxFile bytes or
// more are refused with 500, as a buffered server must. It serves only
// plain file names in dir; it is safe for concurrent use.
//
// Never use it to serve anything: one large download costs its size in
// memory, twenty cost twenty times that.
func NaiveHandler(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		path := filepath.Join(dir, name)
		switch r.Method {
		case http.MethodGet:
			st, err := os.Stat(path)
			if err != nil || !st.Mode().IsRegular() {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
			if st.Size() > NaiveMaxFile {
				http.Error(w, fmt.Sprintf("file too large to buffer: %d bytes", st.Size()), http.StatusInternalServerError)
				return
			}
			data, err := os.ReadFile(path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data)
		case http.MethodPut:
			data, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		default:
			w.Header().Set("Allow", "GET, PUT")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}
