// This file owns the two appliers a case compares: MariaDB's built-in
// replica (CHANGE MASTER ... MASTER_USE_GTID=slave_pos, START SLAVE, then
// MASTER_GTID_WAIT for the primary's position) and gapless replicate
// --until that position. Each gets its own fresh target and a time limit;
// an applier that is still running at the limit is a hang.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gapless/internal/sandbox"
)

// applyRun is how one applier's run ended.
type applyRun struct {
	OK      bool   // reached the position (gapless: exited 0)
	Hang    bool   // still running at the time limit
	Exit    int    // gapless's exit code; -1 when it was ended
	Message string // the error, or gapless's last stderr line
	Command string // how to run it by hand
	Log     string
	Seconds float64
}

// runMariaDBReplica makes target a replica of primary from the start of
// its binlog and waits until it has applied pos, stopped with an error, or
// timeout has passed.
func runMariaDBReplica(ctx context.Context, primary, target *sandbox.Server, pos string, timeout time.Duration) applyRun {
	began := time.Now()
	change := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		primary.Port, sandbox.ReplUser, sandbox.ReplPassword)
	run := applyRun{Command: change + "; START SLAVE; SELECT MASTER_GTID_WAIT('" + pos + "')"}
	db, err := target.Open("")
	if err != nil {
		run.Message = err.Error()
		return run
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	if err := target.Exec(ctx, "SET GLOBAL gtid_slave_pos=''", change, "START SLAVE"); err != nil {
		run.Message = err.Error()
		return run
	}
	deadline := time.Now().Add(timeout)
	for {
		var reached sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 0.5)", pos).Scan(&reached); err != nil {
			run.Message = "MASTER_GTID_WAIT: " + err.Error()
			return run
		}
		if reached.Valid && reached.Int64 == 0 {
			run.OK, run.Seconds = true, time.Since(began).Seconds()
			_ = target.Exec(ctx, "STOP SLAVE")
			return run
		}
		status, err := slaveStatus(ctx, db)
		if err != nil {
			run.Message = err.Error()
			return run
		}
		if status["Slave_SQL_Running"] == "No" || (status["Slave_IO_Running"] == "No" && status["Last_IO_Errno"] != "0") {
			run.Message = fmt.Sprintf("stopped at %q: SQL error %s %q, IO error %s %q", status["Gtid_Slave_Pos"],
				status["Last_SQL_Errno"], status["Last_SQL_Error"], status["Last_IO_Errno"], status["Last_IO_Error"])
			return run
		}
		if time.Now().After(deadline) {
			run.Hang = true
			run.Message = fmt.Sprintf("did not reach %s within %s (at %q; IO thread %s, %q, error %s %q; SQL thread %s)", pos, timeout,
				status["Gtid_Slave_Pos"], status["Slave_IO_Running"], status["Slave_IO_State"], status["Last_IO_Errno"], status["Last_IO_Error"], status["Slave_SQL_Running"])
			return run
		}
	}
}

func slaveStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if !rows.Next() {
		return out, rows.Err()
	}
	values := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, c := range cols {
		out[c] = values[i].String
	}
	return out, rows.Err()
}

// gaplessSettings is one way of running gapless on a case.
type gaplessSettings struct {
	Workers   int
	Policy    string // "" = gapless's default
	Flags     []string
	Interrupt string // variant.Interrupt
}

// gaplessArgs are the arguments of gapless replicate for a case.
func gaplessArgs(primary, target *sandbox.Server, pos, relayDir string, s gaplessSettings) []string {
	args := []string{"replicate",
		"--source", primary.URL(sandbox.ReplUser, sandbox.ReplPassword),
		"--target", target.URL(sandbox.ApplierUser, sandbox.ApplierPassword),
		"--until", pos, "--relay-dir", relayDir, "--progress", "0",
		"--workers", fmt.Sprint(s.Workers)}
	if s.Policy != "" {
		args = append(args, "--policy", s.Policy)
	}
	return append(args, s.Flags...)
}

// maxInterruptedRuns bounds the runs of an interrupted variant: the run
// before the last stops after 2^(n-2) commits, more than any case holds.
const maxInterruptedRuns = 40

// runGapless runs gapless replicate --until pos onto target. Its output
// goes to logs in workDir; a run still going at timeout is stopped and is
// a hang. With s.Interrupt, gapless is interrupted after 1, 2, 4, ...
// commits and run again on the same target and relay log, until a run
// reaches the position; timeout then bounds them all.
func runGapless(ctx context.Context, binary string, primary, target *sandbox.Server, pos, workDir string, s gaplessSettings, timeout time.Duration) applyRun {
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return applyRun{Message: err.Error()}
	}
	args := gaplessArgs(primary, target, pos, filepath.Join(workDir, "relay"), s)
	if s.Interrupt == "" {
		run, _ := gaplessRun(ctx, binary, args, nil, workDir, "gapless.log", timeout)
		return run
	}
	deadline := time.Now().Add(timeout)
	var total float64
	for i := range maxInterruptedRuns {
		env := []string{fmt.Sprintf("%s=%d", s.Interrupt, int64(1)<<i)}
		run, interrupted := gaplessRun(ctx, binary, args, env, workDir, fmt.Sprintf("gapless-%d.log", i+1), time.Until(deadline))
		total += run.Seconds
		run.Seconds = total
		if !interrupted {
			if !run.OK && !run.Hang {
				run.Message = fmt.Sprintf("run %d (after %d interrupted): %s", i+1, i, run.Message)
			}
			return run
		}
	}
	return applyRun{Exit: -1, Seconds: total, Message: fmt.Sprintf("did not reach the position in %d interrupted runs", maxInterruptedRuns)}
}

// gaplessRun is one run of gapless with env added to the environment. It
// reports whether the run ended before the position by the signal env
// asked for: a stop (exit 0 without "until reached") or a kill.
func gaplessRun(ctx context.Context, binary string, args, env []string, workDir, logName string, timeout time.Duration) (run applyRun, interrupted bool) {
	run = applyRun{Command: strings.TrimSpace(strings.Join(env, " ") + " " + binary + " " + strings.Join(args, " ")), Log: filepath.Join(workDir, logName)}
	began := time.Now()
	out, err := runLogged(ctx, binary, args, append(os.Environ(), env...), workDir, run.Log, max(timeout, time.Second))
	run.Seconds = time.Since(began).Seconds()
	var exit *exec.ExitError
	switch {
	case errors.Is(err, errTimedOut):
		run.Hang, run.Exit = true, -1
		run.Message = fmt.Sprintf("still running after %s; last output: %s", timeout, lastLines(out, 1))
	case err == nil:
		run.OK = true
		return run, len(env) > 0 && !strings.Contains(out, "until reached: ")
	case errors.As(err, &exit):
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && len(env) > 0 && status.Signaled() && status.Signal() == syscall.SIGKILL {
			return run, true
		}
		run.Exit = exit.ExitCode()
		run.Message = gaplessMessage(out)
	default:
		run.Exit = -1
		run.Message = err.Error()
	}
	return run, false
}

// gaplessMessage is the line gapless ended with: its "gapless: ..." error
// line when there is one, else the last line of its output.
func gaplessMessage(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "gapless: ") {
			return strings.TrimSpace(lines[i])
		}
	}
	return lastLines(out, 1)
}
