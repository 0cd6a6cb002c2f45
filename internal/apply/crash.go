// crash.go lets tests kill the process at a chosen point, through the
// environment, so crash recovery is tested on the real binary unchanged:
//
//	GAPLESS_CRASH_AFTER_COMMITS=N   SIGKILL itself right after the Nth commit of the run
package apply

import (
	"os"
	"strconv"
	"syscall"
)

var crashAfterCommits = func() int64 {
	n, _ := strconv.ParseInt(os.Getenv("GAPLESS_CRASH_AFTER_COMMITS"), 10, 64)
	return n
}()

func crashPoint(commits int64) {
	if crashAfterCommits > 0 && commits == crashAfterCommits {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
