// Command fileserver is the lab's Go standard-library peer (largo bench
// --peer fileserver): http.FileServer over a folder, nothing else, so that
// largo is measured beside what Go gives for free. The lab builds it from
// this source with the go command: usage fileserver DIR PORT.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fileserver DIR PORT")
		os.Exit(2)
	}
	srv := &http.Server{
		Addr:              "127.0.0.1:" + os.Args[2],
		Handler:           http.FileServer(http.Dir(os.Args[1])),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintln(os.Stderr, srv.ListenAndServe())
	os.Exit(1)
}
