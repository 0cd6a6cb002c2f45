// client.go is the other end of the API, for `gapless stop --http ADDR`.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Fetch reads /status from the replicate serving at addr.
func Fetch(ctx context.Context, addr string) (Stream, error) {
	var report Report
	if err := call(ctx, http.MethodGet, addr, "/status", &report); err != nil {
		return Stream{}, err
	}
	if len(report.Streams) != 1 {
		return Stream{}, fmt.Errorf("http://%s/status: %d streams, want 1", addr, len(report.Streams))
	}
	return report.Streams[0], nil
}

// RequestStop asks the replicate at addr for its gap-less stop, then waits
// until it has stopped (it stops answering, or says stopped or failed), at
// most wait. It returns the last state it read.
func RequestStop(ctx context.Context, addr string, wait time.Duration) (Stream, error) {
	listen, err := ListenAddress(addr)
	if err != nil {
		return Stream{}, err
	}
	last, err := Fetch(ctx, listen)
	if err != nil {
		return Stream{}, err
	}
	// The answer comes once the run has ended, or after a few seconds;
	// then /status is read until it says so or the process is gone.
	var report Report
	if err := call(ctx, http.MethodPost, listen, "/stop?wait=3", &report); err == nil && len(report.Streams) == 1 {
		last = report.Streams[0]
		if last.State == "stopped" || last.State == "failed" {
			return last, nil
		}
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		st, err := Fetch(ctx, listen)
		if err != nil {
			// The process has exited: its last words were the stopping state.
			last.State = "stopped"
			return last, nil
		}
		last = st
		if st.State == "stopped" || st.State == "failed" {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return last, fmt.Errorf("the replicate at %s was asked to stop and is still %s after %s", listen, last.State, wait)
}

func call(ctx context.Context, method, addr, path string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s (%v); is gapless replicate running with --http %s?", ErrNotRunning, addr, errors.Unwrap(err), addr)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s http://%s%s: %s", method, addr, path, resp.Status)
	}
	if into == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
