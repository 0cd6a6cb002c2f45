// http_test.go drives replicate --http as the people who run a replica
// would: the live page in a real browser (headless Chromium, through the
// DevTools protocol), /metrics read by a parser of the Prometheus text
// format, and gapless stop --http while pages and scrapes keep coming. The
// load is sysbench on the primary, as in the demo and the benchmarks.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"gapless/internal/sandbox"
	"gapless/internal/status"
)

// TestLivePageMetricsAndStopOverHTTP: 8 workers replicate a sysbench load
// with --http; the page shows the workers and a throughput or lag above
// zero, and they change; /metrics parses and holds every worker's state and
// no label of unbounded values; nothing served shows a password; a stop
// through the API ends the run at once while pages and scrapes answer, and
// a second run then brings the target equal to the primary.
func TestLivePageMetricsAndStopOverHTTP(t *testing.T) {
	browser := findChromium(t)
	sysbench := lookPathOrSkip(t, "sysbench")
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	load := startSysbench(t, sysbench, sb.Primary)

	addr := freeLoopbackAddr(t)
	_, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--workers", "8", "--http", addr)...)
	base := "http://" + addr
	waitUntilHTTP(t, 60*time.Second, "the status API to say running with some applied", func() bool {
		st, err := status.Fetch(context.Background(), addr)
		return err == nil && st.State == "running" && st.Live.Applied > 0
	}, stderr)

	shot := checkLivePage(t, browser, base)
	out := filepath.Join(t.ArtifactDir(), "live-page.png")
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the live page: %s", out)
	if dir := os.Getenv("GAPLESS_SCREENSHOT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "live-page.png"), shot, 0o644)
	}

	checkMetrics(t, base, 8)
	for _, path := range []string{"/", "/status", "/metrics"} {
		body := get(t, base+path)
		for _, secret := range []string{sandbox.ReplUser + ":" + sandbox.ReplPassword + "@", sandbox.ApplierUser + ":" + sandbox.ApplierPassword + "@"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows a password (%q)", path, secret)
			}
		}
	}

	// The stop through the API, while a page load, a status read and a
	// scrape keep coming: each answers until the process has exited.
	var mu sync.Mutex
	answered, failed := 0, []string{}
	stopLoad := make(chan struct{})
	var loaders sync.WaitGroup
	for _, path := range []string{"/", "/status", "/metrics"} {
		loaders.Add(1)
		go func() {
			defer loaders.Done()
			client := &http.Client{Timeout: 3 * time.Second}
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				resp, err := client.Get(base + path)
				mu.Lock()
				switch {
				case err == nil && resp.StatusCode == 200:
					answered++
				case err == nil:
					failed = append(failed, fmt.Sprintf("%s: %s", path, resp.Status))
				case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF):
					// The process has exited, or is closing its connections.
				default:
					// A timeout: the request hung.
					failed = append(failed, fmt.Sprintf("%s: %v", path, err))
				}
				mu.Unlock()
				if resp != nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	stop := gapless(t, nil, "stop", "--http", addr)
	took := time.Since(began)
	r := wait()
	close(stopLoad)
	loaders.Wait()
	t.Logf("gapless stop took %s: %s", took.Round(time.Millisecond), strings.TrimSpace(stop.stdout))
	if stop.code != 0 || !strings.Contains(stop.stdout, "stopped at position") {
		t.Fatalf("gapless stop exited %d:\n%s%s", stop.code, stop.stdout, stop.stderr)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "stopped: applied") {
		t.Fatalf("replicate after the stop exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if took > 10*time.Second {
		t.Errorf("the stop through the API took %s", took)
	}
	if len(failed) > 0 || answered == 0 {
		t.Errorf("during the stop %d requests answered and these did not: %v", answered, failed)
	}
	final := strings.Fields(strings.TrimSpace(stop.stdout))
	if want := "position " + final[len(final)-1]; !strings.Contains(r.stdout, want) {
		t.Errorf("gapless stop says %q, replicate says %q", stop.stdout, r.stdout)
	}

	load.stop()
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

// checkLivePage opens the page in headless Chromium and checks through its
// DOM that it shows 8 workers, a throughput or lag above zero, and that
// what it shows changes; it returns a screenshot.
func checkLivePage(t *testing.T, browser, url string) []byte {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
	}
	ctx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	type view struct {
		Workers             int
		States, Rows        []string
		Rate, Lag, Applied  string
		ChartPoints, Chains int
	}
	read := func() view {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
			const rows = [...document.querySelectorAll("#workers tbody tr")];
			return {
				Workers: rows.length,
				States: rows.map(r => r.cells[1].textContent),
				Rows: rows.map(r => r.textContent),
				Rate: document.getElementById("rate").textContent,
				Lag: document.getElementById("lag").textContent,
				Applied: document.getElementById("applied").textContent,
				ChartPoints: (document.querySelector("#rate-chart polyline")?.getAttribute("points") || "").split(" ").filter(Boolean).length,
				Chains: document.querySelectorAll("#chains tbody tr").length,
			};
		})()`))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return v
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#workers tbody tr"))); err != nil {
		t.Fatalf("opening the live page %s: %v", url, err)
	}
	number := func(s string) float64 {
		f, _ := strconv.ParseFloat(strings.Fields(strings.ReplaceAll(s, ",", "") + " x")[0], 64)
		return f
	}
	known := []string{"idle", "connecting", "applying", "waiting for dependencies", "executed ahead; waiting for dependencies", "waiting for prior commit", "retrying", "reconnecting"}
	first := read()
	var last view
	moving := false
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		last = read()
		if last.Applied != first.Applied && !slices.Equal(last.Rows, first.Rows) && (number(last.Rate) > 0 || number(last.Lag) > 0) && last.ChartPoints >= 3 {
			moving = true
			break
		}
	}
	t.Logf("page: %d workers %v, %s/s, lag %s, applied %s then %s, %d chart points, %d chains",
		last.Workers, last.States, last.Rate, last.Lag, first.Applied, last.Applied, last.ChartPoints, last.Chains)
	if last.Workers != 8 {
		t.Errorf("the page shows %d workers, want 8", last.Workers)
	}
	for _, st := range last.States {
		if !slices.Contains(known, st) {
			t.Errorf("a worker's state reads %q", st)
		}
	}
	if !moving {
		t.Errorf("the page did not move in 10 s: applied %s then %s, rate %s, lag %s, %d chart points, rows changed %v",
			first.Applied, last.Applied, last.Rate, last.Lag, last.ChartPoints, !slices.Equal(last.Rows, first.Rows))
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return shot
}

// checkMetrics parses /metrics in the Prometheus text format and checks
// what it holds.
func checkMetrics(t *testing.T, base string, workers int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not in the Prometheus text format: %v", err)
	}
	value := func(name string) float64 {
		mf := families[name]
		if mf == nil || len(mf.Metric) == 0 {
			t.Errorf("no %s", name)
			return 0
		}
		m := mf.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return 0
	}
	for _, name := range []string{"gapless_applied_transactions_total", "gapless_applied_bytes_total", "gapless_received_transactions_total",
		"gapless_received_bytes_total", "gapless_relay_log_bytes", "gapless_batch_size_transactions", "gapless_commit_duration_seconds", "gapless_up"} {
		if v := value(name); v <= 0 {
			t.Errorf("%s = %v, want above 0", name, v)
		}
	}
	for _, name := range []string{"gapless_lag_seconds", "gapless_behind_transactions", "gapless_queue_transactions", "gapless_queue_bytes",
		"gapless_retries_total", "gapless_conflicts_total", "gapless_watchdog_kills_total", "go_goroutines", "process_resident_memory_bytes"} {
		value(name)
	}
	// Each worker is in exactly one state.
	inState := map[string]float64{}
	for _, m := range families["gapless_worker_state"].GetMetric() {
		inState[label(m, "worker")] += m.GetGauge().GetValue()
	}
	if len(inState) != workers {
		t.Errorf("gapless_worker_state has %d workers, want %d", len(inState), workers)
	}
	for w, n := range inState {
		if n != 1 {
			t.Errorf("worker %s is in %v states", w, n)
		}
	}
	// Labels: only names from a closed set, whose values cannot grow without bound.
	bounded := map[string]bool{"stream": true, "policy": true, "worker": true, "state": true, "reason": true, "keys": true}
	for name, mf := range families {
		if !strings.HasPrefix(name, "gapless_") {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if !bounded[l.GetName()] {
					t.Errorf("%s has label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	if hist := families["gapless_commit_duration_seconds"]; hist.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("gapless_commit_duration_seconds is a %v, want a histogram", hist.GetType())
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// findChromium finds Debian's chromium (scripts/install-deps.sh installs it):
// missing, the test skips, or fails under CI.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: run scripts/install-deps.sh")
	}
	t.Skip("chromium is not installed (scripts/install-deps.sh installs it)")
	return ""
}

func lookPathOrSkip(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: run scripts/install-deps.sh", name)
		}
		t.Skipf("%s is not installed (scripts/install-deps.sh installs it)", name)
	}
	return path
}

type sysbenchLoad struct {
	t       *testing.T
	primary *sandbox.Server
	cmd     *exec.Cmd
	done    chan struct{}
}

// stop ends sysbench and waits until the primary has ended its sessions
// too. A client that exits leaves a COMMIT it had sent running on the
// server, which on a busy machine can reach the binlog after the position a
// test reads next: the target, stopped there, would then miss that
// transaction (seen as a whole sysbench transaction missing, three rows of
// three tables).
func (l *sysbenchLoad) stop() {
	l.t.Helper()
	l.cmd.Process.Signal(os.Interrupt)
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		l.cmd.Process.Kill()
		<-l.done
	}
	db := rootDB(l.t, l.primary)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var sessions int
		err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", sandbox.ApplierUser).Scan(&sessions)
		if err == nil && sessions == 0 {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("sysbench's sessions on the primary did not end in 30 s (%d left, %v)", sessions, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startSysbench prepares 4 small tables on the primary and writes to them
// with 4 clients for at most two minutes, until stopped.
func startSysbench(t *testing.T, sysbench string, primary *sandbox.Server) *sysbenchLoad {
	t.Helper()
	mustExec(t, primary, "CREATE DATABASE sbtest")
	args := []string{"oltp_write_only", "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(primary.Port),
		"--mysql-user=" + sandbox.ApplierUser, "--mysql-password=" + sandbox.ApplierPassword, "--mysql-db=sbtest", "--tables=4", "--table-size=2000"}
	if out, err := exec.Command(sysbench, append(args, "prepare")...).CombinedOutput(); err != nil {
		t.Fatalf("sysbench prepare: %v\n%s", err, out)
	}
	cmd := exec.Command(sysbench, append(args, "--threads=4", "--time=120", "run")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &sysbenchLoad{t: t, primary: primary, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(l.done) }()
	t.Cleanup(func() { l.cmd.Process.Kill(); <-l.done })
	return l
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUntilHTTP(t *testing.T, limit time.Duration, what string, ok func() bool, stderr interface{ String() string }) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; replicate's stderr:\n%s", limit, what, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
