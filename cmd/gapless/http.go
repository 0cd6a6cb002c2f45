package main

import (
	"context"
	"fmt"

	"gapless/internal/apply"
	"gapless/internal/status"
)

// startHTTP serves --http ADDR for the run (internal/status): it returns the
// context the run must use, which a stop through the API (POST /stop, gapless
// stop --http) ends as SIGTERM does, and the func to call with the run's
// outcome, which records it and closes the server. Without --http it changes
// nothing.
func startHTTP(ctx context.Context, addr string, cfg *apply.Config, target string, secrets ...string) (context.Context, func(apply.Result, error), error) {
	if addr == "" {
		return ctx, func(apply.Result, error) {}, nil
	}
	ctx, stop := context.WithCancel(ctx)
	srv, err := status.Start(addr, status.Options{
		Stream: cfg.Stream, Policy: cfg.Policy, CommitOrder: string(cfg.CommitOrder), Workers: cfg.Workers,
		Stop: stop, Stopping: ctx.Done(), Target: target, Secrets: secrets,
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	cfg.Observe = srv.Attach
	fmt.Printf("status page http://%s/ (metrics /metrics, JSON /status)\n", srv.Addr())
	return ctx, func(res apply.Result, err error) {
		srv.Finish(res, err)
		srv.Close()
		stop()
	}, nil
}
