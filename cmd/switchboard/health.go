package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is `switchboard health`: GET /healthz of a running serve,
// for container health checks and scripts (the image needs no curl).
func newHealthCmd(s *streams) *cobra.Command {
	var configFile, target string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that a running serve answers /healthz (exit 0) or not (exit 1)",
		Long: `Ask the running serve's /healthz. The address is the config's [http] listen
(a wildcard host such as 0.0.0.0 is asked on 127.0.0.1), or --url.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := target
			if url == "" {
				cfg, err := loadConfigWith(configFile)
				if err != nil {
					return err
				}
				url = healthURL(cfg.HTTP.Listen)
			}
			if err := checkHealth(cmd.Context(), url, timeout); err != nil {
				fmt.Fprintln(s.err, "switchboard: unhealthy:", err)
				return exitError{1}
			}
			fmt.Fprintln(s.out, "ok")
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "config file (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")
	cmd.Flags().StringVar(&target, "url", "", "the health URL to ask (default: http://[http] listen/healthz)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

// healthURL is the /healthz URL of a listen address, asking a wildcard
// listener on the loopback address.
func healthURL(listen string) string {
	return "http://" + dialAddr(listen) + "/healthz"
}

// dialAddr turns a listen address into one to connect to: an empty or
// wildcard host becomes the loopback address.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// checkHealth asks url and wants 200 "ok".
func checkHealth(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("bad health URL %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("GET %s answered %s %q", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
