package status

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"gapless/internal/apply"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestListenAddressIsLoopbackUnlessSaid(t *testing.T) {
	for in, want := range map[string]string{
		"9104": "127.0.0.1:9104", ":9104": "127.0.0.1:9104", "localhost:0": "localhost:0",
		"0.0.0.0:9104": "0.0.0.0:9104", "[::]:9104": "[::]:9104", "10.1.2.3:80": "10.1.2.3:80",
	} {
		if got, err := ListenAddress(in); err != nil || got != want {
			t.Errorf("ListenAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host", "host:port", "1:99999"} {
		if _, err := ListenAddress(bad); err == nil {
			t.Errorf("ListenAddress(%q) took it", bad)
		}
	}
}

func TestRedactKeepsNamesAndDropsValues(t *testing.T) {
	for in, want := range map[string]string{
		"target error 1062: Duplicate entry '150-secret' for key 'PRIMARY'": "target error 1062: Duplicate entry '…' for key 'PRIMARY'",
		"Incorrect integer value: 'abc' for column `d`.`t`.`i` at row 1":    "Incorrect integer value: '…' for column `d`.`t`.`i` at row 1",
		"Can't find record in 't1'":                                         "Can't find record in 't1'",
		"Table 'd.t' doesn't exist":                                         "Table 'd.t' doesn't exist",
		"access denied for mysql://u:hunter2@db:3306 with password hunter2": "access denied for mysql://u:***@db:3306 with password ***",
	} {
		if got := Redact(in, "hunter2"); got != want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// Before a run is attached, and after it failed, every surface answers; the
// failure is served without the row values of its message; /stop asks once.
func TestServesBeforeTheRunAndAfterItFailed(t *testing.T) {
	var stops atomic.Int32
	s := newServer(Options{Stream: "default", Policy: "writeset", CommitOrder: "strict", Workers: 4, Stop: func() { stops.Add(1) }})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	st := getStatus(t, srv.URL)
	if st.State != "starting" || st.Name != "default" || st.Live.Policy != "writeset" {
		t.Errorf("before the run: %+v", st)
	}
	families := scrape(t, srv.URL)
	if up := families["gapless_up"]; up == nil || up.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("gapless_up before the run: %v", up)
	}
	if families["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}

	post := func(path string) (int, Stream) {
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		var report Report
		if err := json.NewDecoder(resp.Body).Decode(&report); err != nil || len(report.Streams) != 1 {
			t.Fatalf("POST %s: %v %+v", path, err, report)
		}
		return resp.StatusCode, report.Streams[0]
	}
	if code, st := post("/stop"); code != http.StatusAccepted || st.State != "stopping" {
		t.Errorf("POST /stop while running: %d %s, want 202 stopping", code, st.State)
	}
	// ?wait answers once the run has ended: here, failed.
	waited := make(chan Stream)
	go func() {
		code, st := post("/stop?wait=10")
		if code != http.StatusOK {
			t.Errorf("POST /stop?wait=10: %d, want 200", code)
		}
		waited <- st
	}()
	time.Sleep(50 * time.Millisecond)
	s.Finish(apply.Result{}, errors.New("apply 0-1-7 on d.t (row events): target error 1062: Duplicate entry 'alice@example.com' for key 'email'"))
	if st := <-waited; st.State != "failed" {
		t.Errorf("the waiting stop got %+v", st)
	}
	st = getStatus(t, srv.URL)
	if st.State != "failed" || st.LastError == nil || strings.Contains(st.LastError.Error, "alice") || !strings.Contains(st.LastError.Error, "'email'") || st.Running {
		t.Errorf("after the failure: %+v %+v", st, st.LastError)
	}
	if code, _ := post("/stop"); code != http.StatusOK {
		t.Errorf("POST /stop after the end: %d, want 200", code)
	}
	if n := stops.Load(); n != 1 {
		t.Errorf("Stop called %d times, want 1", n)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `id="workers"`) || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("GET /: %s %q", resp.Status, body[:min(len(body), 80)])
	}
	if resp, _ := http.Get(srv.URL + "/stop"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /stop: %s, want 405", resp.Status)
	}
}

func getStatus(t *testing.T, base string) Stream {
	t.Helper()
	st, err := Fetch(t.Context(), strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}
