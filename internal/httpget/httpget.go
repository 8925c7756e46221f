// Package httpget is the one way benchq's programs fetch a small HTTP
// resource they depend on (a daemon's health, an exporter's /metrics):
// bounded in time and size, and a status other than 200 is an error that
// says what was asked and what the server answered.
package httpget

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MaxBody is the most of a body read.
const MaxBody = 64 << 20

// Get fetches url within timeout and returns the body; a status other than
// 200 is an error naming what (e.g. "victoria-metrics /health") and
// carrying the body's start.
func Get(ctx context.Context, what, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(body[:min(len(body), 300)])))
	}
	return body, nil
}
