package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

// reportSink is a report server on 127.0.0.1 that keeps what it is sent.
type reportSink struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]string // by path
}

func newReportSink(t *testing.T) *reportSink {
	t.Helper()
	s := &reportSink{bodies: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies[r.URL.Path] = append(s.bodies[r.URL.Path], string(b))
		s.mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *reportSink) got(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies[path]...)
}

func (s *reportSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.bodies {
		n += len(b)
	}
	return n
}

// loadSeed writes a NoCloud seed directory and loads it as a run would.
func loadSeed(t *testing.T, metaData, userData string) *seed.Seed {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"meta-data": metaData, "user-data": userData} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sd, err := seed.LoadNoCloudDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

// runReported runs stages (nil: all) for sd in a fresh root and returns
// the log.
func runReported(t *testing.T, dir string, sd *seed.Seed, d *trust.Decision, stages ...apply.Stage) string {
	t.Helper()
	return runReportedCmdline(t, dir, sd, d, "", stages...)
}

// runReportedCmdline is runReported with seedinit.report=cmdline.
func runReportedCmdline(t *testing.T, dir string, sd *seed.Seed, d *trust.Decision, cmdline string, stages ...apply.Stage) string {
	t.Helper()
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var logBuf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logBuf}, nil))
	opts := Options{Root: root, Seed: sd, Stages: stages, Sys: &applytest.FakeSystem{}, Log: log, ModuleTimeout: time.Second, SeedTrust: d, CmdlineReportURL: cmdline}
	if d != nil {
		opts.SeedErrors, opts.SeedWarnings = d.Report()
	}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Log(logBuf.String())
	return logBuf.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// reportLines are the log's lines about the report.
func reportLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="report `) {
			out = append(out, l)
		}
	}
	return out
}

const secretUserData = `#cloud-config
cloud_init_modules: [%s]
cloud_config_modules: []
cloud_final_modules: []
test_ok: true
chpasswd: {users: [{name: root, password: hunter2-not-for-the-server}]}
`

// The report's body is `seedinit status --format json`: a clean run
// says done, a run whose module failed says error with that module's
// error, and neither the body nor the log carries the user-data. That
// the server reads these as provisioned and failed is
// serve/server's TestReportURLRoundTrip (serve sits above apply).
func TestReportReadsAsProvisionedOrFailed(t *testing.T) {
	sink := newReportSink(t)
	for _, tc := range []struct {
		name, modules string
		want          string
		wantErr       string
	}{
		{"provisioned", "test_ok", "done", ""},
		{"failed", "test_ok, test_fails", "error", "test_fails: it broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/report/" + tc.name
			sd := loadSeed(t, "instance-id: i-"+tc.name+"\n"+ReportMetaKey+": "+sink.URL+path+"\n",
				strings.Replace(secretUserData, "%s", tc.modules, 1))
			log := runReported(t, t.TempDir(), sd, nil)
			bodies := sink.got(path)
			if len(bodies) != 1 {
				t.Fatalf("the server got %d reports at %s, want 1", len(bodies), path)
			}
			var report struct {
				Status string
				Errors []string
			}
			if err := json.Unmarshal([]byte(bodies[0]), &report); err != nil {
				t.Fatalf("the report is not status's JSON: %v\n%s", err, bodies[0])
			}
			if report.Status != tc.want {
				t.Errorf("status %q, want %q (errors %q)", report.Status, tc.want, report.Errors)
			}
			if got := strings.Join(report.Errors, "\n"); tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
				t.Errorf("errors %q lack %q", got, tc.wantErr)
			}
			lines := reportLines(log)
			if len(lines) != 1 || !strings.Contains(lines[0], `msg="report sent"`) || !strings.Contains(lines[0], "from=\"meta-data "+ReportMetaKey+"\"") {
				t.Errorf("want one line saying the report was sent and where the URL came from, got %q", lines)
			}
			for what, text := range map[string]string{"body": bodies[0], "log": log} {
				if strings.Contains(text, "hunter2") {
					t.Errorf("the %s carries the user-data's password:\n%s", what, text)
				}
			}
		})
	}
}

// The cloud-config's URL wins over the meta-data's; enabled: false
// sends nothing; a run that does not end with the final stage (PID 1's,
// before the handoff) sends nothing either.
func TestReportURLSources(t *testing.T) {
	sink := newReportSink(t)
	meta := "instance-id: i-1\n" + ReportMetaKey + ": " + sink.URL + "/report/from-meta\n"
	userData := func(report string) string {
		return "#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\n" + report
	}

	runReported(t, t.TempDir(), loadSeed(t, meta, userData("seedinit: {report: {url: '"+sink.URL+"/report/from-config'}}\n")), nil)
	if n, m := len(sink.got("/report/from-config")), len(sink.got("/report/from-meta")); n != 1 || m != 0 {
		t.Errorf("cloud-config and meta-data URLs: %d and %d reports, want 1 and 0", n, m)
	}

	before := sink.count()
	runReported(t, t.TempDir(), loadSeed(t, meta, userData("seedinit: {report: {enabled: false}}\n")), nil)
	if sink.count() != before {
		t.Errorf("seedinit.report.enabled false: a report was sent")
	}

	runReported(t, t.TempDir(), loadSeed(t, meta, userData("")), nil, apply.StageLocal, apply.StageNetwork, apply.StageConfig)
	if sink.count() != before {
		t.Errorf("a run without the final stage sent a report")
	}
	// PID 1's run sends none but is told where, for a handoff strict
	// mode refuses.
	root, err := rootfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rep, err := Run(context.Background(), Options{Root: root, Seed: loadSeed(t, meta, userData("seedinit: {report: {enabled: true}}\n")), Sys: &applytest.FakeSystem{},
		Stages: []apply.Stage{apply.StageLocal, apply.StageNetwork, apply.StageConfig}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReportURL != sink.URL+"/report/from-meta" || rep.ReportFrom != "meta-data "+ReportMetaKey {
		t.Errorf("PID 1's run: report URL %q from %q, want the meta-data's", rep.ReportURL, rep.ReportFrom)
	}
	for _, s := range rep.Stages {
		for _, w := range s.Warnings {
			if strings.Contains(w, `"seedinit"`) {
				t.Errorf("seedinit's own key warned about: %s", w)
			}
		}
	}

	// OpenStack's instance properties.
	sd := loadSeed(t, "instance-id: i-2\n", userData(""))
	sd.Metadata["meta"] = map[string]any{ReportMetaKey: sink.URL + "/report/from-properties"}
	runReported(t, t.TempDir(), sd, nil, apply.StageFinal)
	if n := len(sink.got("/report/from-properties")); n != 1 {
		t.Errorf("meta-data meta.%s: %d reports, want 1", ReportMetaKey, n)
	}
}

// Under require, a report URL in an unsigned meta-data, user-data or
// datasource config is not used: the run reports to no one. Under warn,
// the same seed is applied whole and reports.
func TestReportURLUnsignedUnderRequire(t *testing.T) {
	for _, tc := range []struct {
		policy trust.Policy
		want   int
	}{
		{trust.Require, 0},
		{trust.Warn, 1},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			sink := newReportSink(t)
			sd := loadSeed(t, "instance-id: i-1\n"+ReportMetaKey+": "+sink.URL+"/report/meta\n",
				"#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\nseedinit: {report: {url: '"+sink.URL+"/report/user'}}\n")
			sd.Config = map[string]any{"seedinit": map[string]any{"report": map[string]any{"url": sink.URL + "/report/ds-config"}}}
			applied, d := trust.Decide(sd, trust.Anchor{Policy: tc.policy, Where: "the test"}, trust.Facts{})
			log := runReported(t, t.TempDir(), applied, d)
			if n := sink.count(); n != tc.want {
				t.Errorf("%s: the server got %d reports, want %d", tc.policy, n, tc.want)
			}
			if tc.want == 0 && len(reportLines(log)) != 0 {
				t.Errorf("require: log lines about a report: %q", reportLines(log))
			}
		})
	}
}

// The kernel command line's seedinit.report= is the last place looked
// at: taken when nothing else names a URL, passed over when the meta-data
// does or the config turns the report off, and never used under require,
// which no signature of the command line could satisfy.
func TestReportURLOnTheCommandLine(t *testing.T) {
	noModules := "#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\n"
	for _, tc := range []struct {
		name, meta, userData string
		policy               trust.Policy
		want                 string // the path reported to; "" for none
		wantLog              string
	}{
		{name: "alone", userData: noModules, want: "/report/cmdline", wantLog: `from="seedinit.report= on the kernel command line"`},
		{name: "meta-data first", meta: ReportMetaKey + ": {{sink}}/report/meta\n", userData: noModules, want: "/report/meta"},
		{name: "turned off", userData: noModules + "seedinit: {report: {enabled: false}}\n"},
		{name: "warn", userData: noModules, policy: trust.Warn, want: "/report/cmdline"},
		{name: "require", userData: noModules, policy: trust.Require, wantLog: "seedinit.report= on the kernel command line not used: seed trust is require"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := newReportSink(t)
			sd := loadSeed(t, "instance-id: i-1\n"+strings.ReplaceAll(tc.meta, "{{sink}}", sink.URL), tc.userData)
			var d *trust.Decision
			if tc.policy != trust.Off {
				sd, d = trust.Decide(sd, trust.Anchor{Policy: tc.policy, Where: "the test"}, trust.Facts{})
			}
			log := runReportedCmdline(t, t.TempDir(), sd, d, sink.URL+"/report/cmdline")
			switch got := sink.count(); {
			case tc.want == "" && got != 0:
				t.Errorf("%d reports, want none", got)
			case tc.want != "" && (got != 1 || len(sink.got(tc.want)) != 1):
				t.Errorf("%d reports, want 1 to %s", got, tc.want)
			}
			if !strings.Contains(log, tc.wantLog) {
				t.Errorf("the log lacks %q", tc.wantLog)
			}
		})
	}
}

// A server that is down, hangs, or fails costs at most the budget, and
// the run goes on as if it were not there: one line says why.
func TestReportBudget(t *testing.T) {
	oldBudget, oldTry, oldWait := reportBudget, reportTryTimeout, reportRetryWait
	reportBudget, reportTryTimeout, reportRetryWait = 1500*time.Millisecond, 400*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { reportBudget, reportTryTimeout, reportRetryWait = oldBudget, oldTry, oldWait })

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/report/i-1"
	dead.Close()

	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) })

	var mu sync.Mutex
	tries := 0
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		http.Error(w, "the state store failed", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)

	for _, tc := range []struct{ name, url, want string }{
		{"dead", deadURL, "connection refused"},
		{"hanging", hanging.URL + "/report/i-1", "no answer within"},
		{"failing", failing.URL + "/report/i-1", "HTTP 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := loadSeed(t, "instance-id: i-1\n"+ReportMetaKey+": "+tc.url+"\n",
				"#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\n")
			start := time.Now()
			log := runReported(t, t.TempDir(), sd, nil, apply.StageFinal)
			// A bound, not a timing claim: the budget with room for a slow
			// machine, far below what an unbounded wait would take.
			if took := time.Since(start); took > reportBudget+3*time.Second {
				t.Errorf("the run took %s with a %s report budget", took, reportBudget)
			}
			lines := reportLines(log)
			if len(lines) != 1 || !strings.Contains(lines[0], `msg="report not sent"`) || !strings.Contains(lines[0], tc.want) {
				t.Errorf("want one line saying the report was not sent (%s), got %q", tc.want, lines)
			}
		})
	}
	if tries != reportTries {
		t.Errorf("a server answering 503 was tried %d times, want %d", tries, reportTries)
	}

	// Tries that would outlast the budget are cut at it.
	reportTryTimeout = reportBudget
	sd := loadSeed(t, "instance-id: i-1\n"+ReportMetaKey+": "+hanging.URL+"/report/i-1\n",
		"#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\n")
	start := time.Now()
	log := runReported(t, t.TempDir(), sd, nil, apply.StageFinal)
	if took := time.Since(start); took > reportBudget+3*time.Second {
		t.Errorf("the run took %s with a %s report budget", took, reportBudget)
	}
	if l := reportLines(log); len(l) != 1 || !strings.Contains(l[0], "tries=1") || !strings.Contains(l[0], "budget of "+reportBudget.String()) {
		t.Errorf("a try as long as the budget: want one line saying the budget was over after 1 try, got %q", l)
	}
}

// A server that refuses the report (4xx: unknown instance) is not asked
// again.
func TestReportRefusedIsNotRetried(t *testing.T) {
	var mu sync.Mutex
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		http.Error(w, "unknown instance: i-1", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	sd := loadSeed(t, "instance-id: i-1\n"+ReportMetaKey+": "+srv.URL+"/report/i-1\n",
		"#cloud-config\ncloud_init_modules: []\ncloud_config_modules: []\ncloud_final_modules: []\n")
	log := runReported(t, t.TempDir(), sd, nil, apply.StageFinal)
	if tries != 1 {
		t.Errorf("a 404 was tried %d times, want 1", tries)
	}
	if l := reportLines(log); len(l) != 1 || !strings.Contains(l[0], "HTTP 404: unknown instance") {
		t.Errorf("log lines %q", l)
	}
}
