// crash.go lets tests kill or stop the process at a chosen point, through
// the environment, so crash recovery and stops are tested on the real
// binary unchanged:
//
//	GAPLESS_CRASH_AFTER_COMMITS=N   SIGKILL itself right after the Nth commit of the run
//	GAPLESS_STOP_AFTER_COMMITS=N    SIGTERM itself right after the Nth commit of the run
//	                                (the stop a user makes, with work still in flight)
package apply

import (
	"os"
	"strconv"
	"syscall"
)

var crashAfterCommits, stopAfterCommits = commitsFromEnv("GAPLESS_CRASH_AFTER_COMMITS"), commitsFromEnv("GAPLESS_STOP_AFTER_COMMITS")

func commitsFromEnv(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

func crashPoint(commits int64) {
	switch {
	case crashAfterCommits > 0 && commits == crashAfterCommits:
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case stopAfterCommits > 0 && commits == stopAfterCommits:
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
