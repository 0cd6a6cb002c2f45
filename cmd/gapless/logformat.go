// logformat.go owns replicate's log (--log-format, and -v for its level):
// on stderr for people (text: key=value lines, log/slog's text handler) or
// for log shippers (json: one object a line, log/slog's JSON handler). Both
// carry the same fields: time, level, msg, the stream, and, where a line is
// about one, the gtid and the worker (apply's worker logger adds it).
package main

import (
	"io"
	"log/slog"
	"os"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// runLogger is replicate's logger on stderr, warnings only unless verbose
// (-v), and the driver's too: its own complaints about dropped connections
// precede a retry, so they show with -v only. Pools take the driver's
// logger when they are opened, so this comes before any is.
func runLogger(format string, verbose bool, stream string) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	logger := newLogger(os.Stderr, format, level, stream)
	mysqldriver.SetLogger(slog.NewLogLogger(logger.Handler(), slog.LevelInfo))
	return logger
}

// newLogger is the run's logger in format ("text" or "json", checked by the
// caller), at level, every line naming the stream in JSON.
func newLogger(w io.Writer, format string, level slog.Level, stream string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)).With("stream", stream)
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
