package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheck is the probe a container's HEALTHCHECK runs: an image
// with no shell and no curl still has largo.
func newHealthcheck(e *env) *cobra.Command {
	var listen string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck [URL]",
		Short: "Exit 0 when the server at --listen (or URL) answers its health check",
		Long: `Ask http://LISTEN/_largo/healthz (an unspecified host, such as 0.0.0.0,
asked on the loopback address), or URL if given, and exit 0 on a 200 answer,
1 otherwise with the reason on one line. It reads --listen from LARGO_LISTEN
like largo serve, so a container's HEALTHCHECK needs no address (an
image with no shell and no curl still has largo).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url, err := healthURL(listen)
			if err != nil {
				return usageErr(err)
			}
			if len(args) == 1 {
				url = args[0]
			}
			if err := probe(cmd.Context(), url, timeout); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address the server listens on, host:port")
	durationVar(cmd.Flags(), &timeout, "timeout", 5*time.Second, "how long the answer may take")
	documentEnv(cmd.Flags())
	return cmd
}

// healthURL is the health endpoint of a server listening on listen.
func healthURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen %q: %v", listen, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/_largo/healthz", nil
}

// probe asks url and reports why it is not healthy.
func probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return fmt.Errorf("%s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
