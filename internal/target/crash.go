// crash.go lets tests kill the process between a group that the target
// binlogs as it executes (AppliesAlone) and its position, the one window
// in which the target holds a transaction its checkpoint does not; and
// make a script wait for an answer the target never sends, as when a
// KILL QUERY ends a script between two statements (apply's unanswered.go):
//
//	GAPLESS_CRASH_BEFORE_POSITION=N   SIGKILL itself before writing the position of the Nth such group
//	GAPLESS_UNANSWERED_SCRIPT=N       the Nth script of two statements or more waits for one answer more than it has
package target

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"gapless/internal/binlog"
)

var (
	crashBeforePositionOf = func() int64 {
		n, _ := strconv.ParseInt(os.Getenv("GAPLESS_CRASH_BEFORE_POSITION"), 10, 64)
		return n
	}()
	appliedAlone atomic.Int64

	unansweredScript = func() int64 {
		n, _ := strconv.ParseInt(os.Getenv("GAPLESS_UNANSWERED_SCRIPT"), 10, 64)
		return n
	}()
	scriptsSent atomic.Int64
)

// answersAwaited is how many answers a script of n statements waits for:
// n, but one more for the script GAPLESS_UNANSWERED_SCRIPT names.
func answersAwaited(n int) int {
	if unansweredScript > 0 && n > 1 && scriptsSent.Add(1) == unansweredScript {
		return n + 1
	}
	return n
}

// crashBeforePosition reports whether txn's position must be written apart
// from its body, for crashPoint to run between the two.
func crashBeforePosition(txn *binlog.Transaction) bool {
	return crashBeforePositionOf > 0 && AppliesAlone(txn)
}

// crashPoint kills the process when txn is the Nth group applied alone.
func crashPoint(txn *binlog.Transaction) {
	if crashBeforePosition(txn) && appliedAlone.Add(1) == crashBeforePositionOf {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// crashWithin returns how many of txns, groups applied alone in one round
// trip, go before the crash staged among them: the round trip ends with
// the group whose crashPoint kills the process.
func crashWithin(txns []*binlog.Transaction) int {
	if crashBeforePositionOf == 0 {
		return len(txns)
	}
	return int(min(int64(len(txns)), max(1, crashBeforePositionOf-appliedAlone.Load())))
}
