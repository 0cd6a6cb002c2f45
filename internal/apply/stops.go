// stops.go records why a run ended on an error in gapless.stops on the
// target, so that `gapless status` shows it after the process is gone.
package apply

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// recordStop keeps err and the transaction it names; nil (a stop, --until
// reached) keeps nothing. A target that cannot be reached keeps nothing
// either: the error is printed all the same.
func (r *Replica) recordStop(err error) {
	if err == nil {
		return
	}
	st := checkpoint.Stop{Position: r.currentPosition().String(), Error: err.Error(), StoppedAt: time.Now()}
	var ae *target.ApplyError
	var de *binlog.DecodeError
	switch {
	case errors.As(err, &ae):
		st.GTID = ae.GTID
	case errors.As(err, &de):
		st.GTID = de.GTID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rerr := r.store.RecordStop(ctx, st); rerr != nil {
		r.log.Warn("the error could not be recorded for gapless status", "error", rerr)
	}
}

// refuseAfterSplit keeps a run from starting after one that stopped at a
// group the target wrote to its binlog as more than one GTID group: that
// group is on the target past the position, and the target's binlog holds
// the sequence number of the source's next transaction of its domain. Run
// again as it was, gapless would take that transaction for applied (it
// finds its GTID there); without the target's binlog, it would apply the
// group again. Only a run that skips the group and leaves the target's
// binlog alone goes on (or one after gapless reset: it clears the stop).
func (r *Replica) refuseAfterSplit(ctx context.Context) error {
	st, ok, err := r.store.LastStop(ctx)
	if err != nil || !ok || !target.SplitGroupStop(st.Error) {
		return err
	}
	g, perr := gtid.ParseMariaDBGTID(st.GTID)
	if perr == nil && !r.cfg.Session.WriteBinlog && slices.Contains(r.cfg.Skip, g) {
		return nil
	}
	return fmt.Errorf("the last run stopped at %s, which the target wrote to its binlog as more than one GTID group: %s is on the target, past the position, "+
		"and the target's binlog holds a sequence number the source gave its next transaction in that domain, so this run would apply %s again or skip that transaction. "+
		"To go on, rebuild the target and run gapless reset, or replicate with --no-target-binlog --skip-gtid %s",
		st.GTID, st.GTID, st.GTID, st.GTID)
}

// targetErrorCode finds the target's error number in a stop's text.
var targetErrorCode = regexp.MustCompile(`target error (\d+)`)

// noteFailedBefore reads which group the run before stopped on with an
// error the target answered to one of its statements (not a lost
// connection: a client error, 2000 and up), before the stop is cleared: a
// group whose writes stay on the target (a table that is not transactional)
// keeps what its statement wrote before such an error, and the target
// binlogs that under the group's GTID, so finding the GTID there does not
// mean the group is applied (worker.apply).
func (r *Replica) noteFailedBefore(ctx context.Context) error {
	st, ok, err := r.store.LastStop(ctx)
	if err != nil || !ok {
		return err
	}
	m := targetErrorCode.FindStringSubmatch(st.Error)
	if m == nil {
		return nil
	}
	if code, _ := strconv.Atoi(m[1]); code >= 2000 {
		return nil
	}
	if g, err := gtid.ParseMariaDBGTID(st.GTID); err == nil {
		r.failedBefore, r.failedBeforeErr = g, "target error "+m[1]
	}
	return nil
}

// stopError adds to a permanent apply error how to get past it.
func (r *Replica) stopError(err error) error {
	var stayed *stayedError
	if errors.As(err, &stayed) {
		return fmt.Errorf("%w\nreplication stopped before %s", err, stayed.gtid)
	}
	var ae *target.ApplyError
	if !errors.As(err, &ae) {
		return err
	}
	if ae.Code == errLockWaitTimeout {
		// Every retry waited as long: what holds the lock is not a
		// transaction of this run that commits in time.
		why := "another client of the target, or a prepared XA transaction on it (XA RECOVER lists them), holds a row it writes"
		if r.cfg.Policy == "domain" {
			why += "; or a group of another GTID domain does: --policy domain takes domains as independent, and where they write the same rows, --policy writeset orders them"
		}
		err = fmt.Errorf("%w\n%s", err, why)
	}
	return fmt.Errorf("%w\nreplication stopped before %s; fix the cause and run again, or skip this transaction with --skip-gtid %s (the target then lacks its changes for good)", err, ae.GTID, ae.GTID)
}

// errLockWaitTimeout is ER_LOCK_WAIT_TIMEOUT.
const errLockWaitTimeout = 1205
