// alone.go applies a job of groups applied alone (target.FollowsAlone): each
// group in target transactions of its own, before its position, one after
// another, or several in one round trip when they are fast (severalAlone).
// A batch that failed for good comes here too, to name the group that fails.
package apply

import (
	"context"
	"errors"
	"time"

	"gapless/internal/target"
)

// oneByOne applies j's transactions one after another, each as a job of
// its own, and returns how many committed. A stop ends it between two:
// the worker has started the next one only if the stop's point includes
// it.
func (w *worker) oneByOne(ctx context.Context, j *job) (int, error) {
	unsure := 0 // the groups before this index may have run in a round trip that failed amid them
	// next is the job of the group at i, begun unless a stop dropped it.
	next := func(i int) (*job, bool) {
		one := &job{gi: j.gi + int64(i), txns: j.txns[i : i+1], unsure: i < unsure}
		w.setState(StateApplying, one)
		return one, !w.replica.clog.dropped(one.gi)
	}
	for i := 0; i < len(j.txns); {
		// The first waits for the job's dependencies; the others follow it.
		one, begun := &job{gi: j.gi, txns: j.txns[:1], deps: j.deps}, true
		if i > 0 {
			one, begun = next(i)
		}
		if !begun {
			return i, errDropped
		}
		if i > 0 && j.alone && !one.unsure {
			n, then, end, err := w.severalAlone(ctx, j, i)
			i += n
			switch {
			case err != nil:
				return i, err
			case then == nextInRoundTrip:
				continue
			case then == nextUnsure:
				unsure = end
			}
			if one, begun = next(i); !begun {
				return i, errDropped
			}
		}
		began := time.Now()
		if err := w.applyJob(ctx, one); err != nil {
			return i, err
		}
		if j.alone && time.Since(began) < severalAloneTime/2 {
			w.several = max(w.several, 2)
		}
		i++
	}
	return len(j.txns), nil
}

// A round trip of groups applied alone holds up to severalAloneMax of
// them, as many as the last one's time says run in about severalAloneTime,
// and groups slower than that go one at a time: a stop waits for the round
// trip in flight (a write to a MyISAM table cannot be rolled back), and
// must come within a second.
const (
	severalAloneMax  = 64
	severalAloneTime = 50 * time.Millisecond
)

// How the group after a round trip of several groups applied alone goes.
const (
	nextInRoundTrip = iota // in another such round trip, if it can
	nextAlone              // alone: it cannot share a round trip
	nextUnsure             // alone, after reading its position back and asking the target's binlog whether it ran: its round trip was lost, or it failed with a transient error
)

// severalAlone applies the groups of a run of groups applied alone from
// from on, as many as can share one round trip (target.Session.ApplyAlone),
// and returns how many committed, how the group after them goes, and
// where the round trip's groups end. It applies none when the one before
// did not just commit on this session (with its one-group check, where the
// target binlogs it), nor when fewer than two can share.
func (w *worker) severalAlone(ctx context.Context, j *job, from int) (n, then, end int, err error) {
	first := j.txns[from]
	domain := first.MariaDB.Domain
	if w.session == nil || w.replica.listsAbove() || w.several < 2 {
		// (The positions of a round trip's groups are written before any
		// of them commits: none could list those before it.)
		return 0, nextAlone, from, nil
	}
	guarded := w.session.GuardsPosition(first)
	if _, ok := w.replica.through.Load(domain); ok || guarded && !w.replica.followsGuarded(j.gi+int64(from), domain) {
		return 0, nextAlone, from, nil
	}
	end = from
	for end < len(j.txns) && end-from < w.several && w.session.Pipelines(j.txns[end]) {
		end++
	}
	if end-from < 2 {
		return 0, nextAlone, from, nil
	}
	several := &job{gi: j.gi + int64(from), txns: j.txns[from:end], alone: true}
	w.setState(StateApplying, several)
	positions := make([]string, len(several.txns))
	for k := range several.txns {
		positions[k] = w.checkpointStatement(&job{gi: several.gi + int64(k), txns: several.txns[k : k+1]})
	}
	began := time.Now()
	n, err = w.session.ApplyAlone(context.WithoutCancel(ctx), several.txns, positions)
	switch took := time.Since(began); {
	case took < severalAloneTime/2 && len(several.txns) == w.several:
		w.several = min(2*w.several, severalAloneMax)
	case took > severalAloneTime:
		w.several = int(int64(len(several.txns)) * int64(severalAloneTime) / int64(took))
	}
	if n > 0 {
		w.committed(&job{gi: several.gi, txns: several.txns[:n]})
		if guarded {
			w.replica.guarded.Store(&guardedGroup{gi: several.gi + int64(n) - 1, domain: domain})
		}
	}
	var ae *target.ApplyError
	failed := several.txns[min(n, len(several.txns)-1)] // the group the error names
	switch {
	case err == nil:
		return n, nextInRoundTrip, end, nil
	case !errors.As(err, &ae):
		return n, nextAlone, end, err
	case target.Lost(ae.Err), target.Interrupted(ae.Err):
		w.log.Warn("target connection lost or interrupted amid groups applied alone; their positions or the target's binlog say which ran", "gtid", ae.GTID, "error", ae.Err)
		w.replica.retried(RetryLostConnection)
		w.close()
		return n, nextUnsure, end, nil
	case ae.Transient() && target.PartsStay(failed):
		return n, nextAlone, end, partsStay(failed, ae)
	case ae.Transient():
		// Tried again alone, as the first try of a group alone would be:
		// after asking the target's binlog, since a group that failed
		// after a write to a non-transactional table is binlogged.
		w.replica.retriedAfter(ae.Code)
		return n, nextUnsure, from + n + 1, nil
	}
	return n, nextAlone, end, err
}
