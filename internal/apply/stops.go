// stops.go records why a run ended on an error in gapless.stops on the
// target, so that `gapless status` shows it after the process is gone.
package apply

import (
	"context"
	"errors"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
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
