package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// probeModel checks that the model endpoint answers GET /models, and says
// what to set when it does not. "" means it is reachable.
func probeModel(ctx context.Context, baseURL, apiKey string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := strings.TrimRight(baseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Sprintf("The model endpoint %q is not a valid URL: set OPENAI_BASE_URL or base_url in [providers].", baseURL)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") {
			return fmt.Sprintf("Cannot reach the model at %s. Start it (a local Ollama listens on 127.0.0.1:11434) or set OPENAI_BASE_URL / base_url in [providers]; messages get this advice until it answers.", baseURL)
		}
		return fmt.Sprintf("Cannot reach the model at %s: set OPENAI_BASE_URL / base_url in [providers].", baseURL)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("The model endpoint %s refused the API key (%s): set OPENAI_API_KEY or api_key in [providers].", baseURL, resp.Status)
	}
	return ""
}

// watchModel probes the endpoint at start and then every interval until it
// answers, reporting each change of the advice to set.
func watchModel(ctx context.Context, baseURL, apiKey string, interval time.Duration, set func(string)) {
	last := "?"
	for {
		advice := probeModel(ctx, baseURL, apiKey)
		if ctx.Err() != nil {
			return
		}
		if advice != last {
			set(advice)
			last = advice
		}
		if advice == "" {
			return
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
