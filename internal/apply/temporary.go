// temporary.go tells the statement session (worker slot 0) of the source's
// temporary tables across its connections and runs: those the target lost,
// and those kept for the next run as this one ends (target/kept.go).
package apply

import (
	"strings"

	"gapless/internal/binlog"
)

// noteLost tells the statement session of temporary tables the target
// lost since it was told last (Replica.lost).
func (w *worker) noteLost() {
	if w.slot != 0 || w.session == nil {
		return
	}
	if n := w.replica.lostN.Load(); n != w.lostSeen {
		w.lostSeen = n
		w.session.Lose(w.replica.lostTemporary())
	}
}

// keepTemporary copies, as the run ends, the temporary tables the source's
// sessions hold in the statement session, for the next run.
func (w *worker) keepTemporary() {
	if w.slot != 0 || w.session == nil || !w.replica.restored {
		return
	}
	if w.session.Parked() {
		w.log.Warn(parkedStopWarning)
	}
	kept, lost := w.session.SaveTemporary(w.replica.cfg.Stream)
	if len(lost) > 0 || w.session.Lacks() > 0 {
		// The next run must know of them (from the binlog).
		w.replica.setLost(w.session.Held())
	}
	if len(kept) > 0 {
		w.log.Info("the temporary tables the source's sessions hold are kept for the next run", "tables", strings.Join(kept, ", "))
	}
	if len(lost) > 0 {
		w.log.Warn("temporary tables the source's sessions hold end with this run: a statement of the source that reads one will stop the next run (1146); stop gapless when the source's sessions hold none", "tables", strings.Join(lost, "; "))
	}
}

// setLost makes held the temporary tables source sessions hold that the
// target lost.
func (r *Replica) setLost(held []binlog.HeldTemporary) {
	r.lostMu.Lock()
	r.lost = held
	r.lostMu.Unlock()
	r.lostN.Add(1)
}

func (r *Replica) lostTemporary() []binlog.HeldTemporary {
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	return r.lost
}
