// logformat.go owns --log-format: replicate's log on stderr for people
// (text: key=value lines, log/slog's text handler) or for log shippers
// (json: one object a line, log/slog's JSON handler). Both carry the same
// fields: time, level, msg, the stream, and, where a line is about one, the
// gtid and the worker (apply's worker logger adds it).
package main

import (
	"io"
	"log/slog"
)

// newLogger is the run's logger in format ("text" or "json", checked by the
// caller), at level, every line naming the stream in JSON.
func newLogger(w io.Writer, format string, level slog.Level, stream string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)).With("stream", stream)
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
