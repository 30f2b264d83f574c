package ds

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"

	"github.com/seedinit/seedinit/internal/testenv"
)

const azureGoalStateXML = `<?xml version="1.0" encoding="utf-8"?>
<GoalState xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="goalstate10.xsd" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <Version>2012-11-30</Version>
  <Incarnation>3</Incarnation>
  <Machine>
    <ExpectedState>Started</ExpectedState>
    <StopRolesDeadlineHint>300000</StopRolesDeadlineHint>
    <ExpectHealthReport>FALSE</ExpectHealthReport>
  </Machine>
  <Container>
    <ContainerId>9c4e3d4b-1d2e-4f5a-8b6c-7d8e9f0a1b2c</ContainerId>
    <RoleInstanceList>
      <RoleInstance>
        <InstanceId>8d7d2a4c-5e6f-4a1b-9c2d-3e4f5a6b7c8d.waf-az-01</InstanceId>
        <State>Started</State>
        <Configuration>
          <HostingEnvironmentConfig>http://168.63.129.16:80/machine/x?comp=config&amp;type=hostingEnvironmentConfig</HostingEnvironmentConfig>
        </Configuration>
      </RoleInstance>
    </RoleInstanceList>
  </Container>
</GoalState>
`

func TestAzureGoalState(t *testing.T) {
	got, err := parseAzureGoalState([]byte(azureGoalStateXML))
	if err != nil {
		t.Fatal(err)
	}
	want := azureGoalState{Incarnation: "3", ContainerID: "9c4e3d4b-1d2e-4f5a-8b6c-7d8e9f0a1b2c", InstanceID: "8d7d2a4c-5e6f-4a1b-9c2d-3e4f5a6b7c8d.waf-az-01"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("goal state (-want +got):\n%s", diff)
	}
	for name, tt := range map[string]struct{ doc, wantErr string }{
		"not XML":        {"{}", "read the goal state"},
		"another root":   {"<Health><Incarnation>1</Incarnation></Health>", "read the goal state"},
		"no container":   {"<GoalState><Incarnation>1</Incarnation></GoalState>", "no Container/ContainerId, Container/RoleInstanceList/RoleInstance/InstanceId"},
		"no incarnation": {strings.Replace(azureGoalStateXML, "<Incarnation>3</Incarnation>", "", 1), "no Incarnation"},
	} {
		if _, err := parseAzureGoalState([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tt.wantErr)
		}
	}
}

// wireserver is a fake Azure fabric endpoint that records what it gets.
type wireserver struct {
	mu       sync.Mutex
	requests []string
	headers  []http.Header
	health   []byte
	// failHealth answers the health post with this status when not 0.
	failHealth int
}

func (w *wireserver) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests = append(w.requests, r.Method+" "+r.URL.RequestURI())
	w.headers = append(w.headers, r.Header.Clone())
	switch {
	case r.Method == http.MethodGet && r.URL.RequestURI() == "/machine/?comp=goalstate":
		io.WriteString(rw, azureGoalStateXML)
	case r.Method == http.MethodPost && r.URL.RequestURI() == "/machine?comp=health":
		if w.failHealth != 0 {
			http.Error(rw, "no", w.failHealth)
			return
		}
		w.health = body
	default:
		http.NotFound(rw, r)
	}
}

func TestAzureReportReady(t *testing.T) {
	ws := &wireserver{}
	srv := httptest.NewServer(ws)
	defer srv.Close()
	var logs bytes.Buffer
	env := testEnv("", map[string]map[string]any{"Azure": {"wireserver_url": srv.URL + "/"}}, &logs)
	r, ok := ReadyReporterFor(&seed.Seed{Datasource: "Azure"})
	if !ok {
		t.Fatal("Azure is not a ReadyReporter")
	}
	if err := r.ReportReady(context.Background(), env, &seed.Seed{Datasource: "Azure"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GET /machine/?comp=goalstate", "POST /machine?comp=health"}, ws.requests); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	for i, h := range ws.headers {
		if h.Get("x-ms-agent-name") != "WALinuxAgent" || h.Get("x-ms-version") != "2012-11-30" {
			t.Errorf("request %d: headers %v lack the agent name and protocol version", i, h)
		}
	}
	if ct := ws.headers[1].Get("Content-Type"); ct != "text/xml; charset=utf-8" {
		t.Errorf("health report Content-Type %q", ct)
	}
	var report struct {
		Incarnation string `xml:"GoalStateIncarnation"`
		Container   string `xml:"Container>ContainerId"`
		Instance    string `xml:"Container>RoleInstanceList>Role>InstanceId"`
		State       string `xml:"Container>RoleInstanceList>Role>Health>State"`
	}
	if err := xml.Unmarshal(ws.health, &report); err != nil {
		t.Fatalf("health report is not XML: %v\n%s", err, ws.health)
	}
	want := "3 9c4e3d4b-1d2e-4f5a-8b6c-7d8e9f0a1b2c 8d7d2a4c-5e6f-4a1b-9c2d-3e4f5a6b7c8d.waf-az-01 Ready"
	if got := strings.Join([]string{report.Incarnation, report.Container, report.Instance, report.State}, " "); got != want {
		t.Errorf("health report names %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "reported ready to Azure") {
		t.Errorf("no log line for the report:\n%s", logs.String())
	}

	ws.failHealth = http.StatusInternalServerError
	if err := r.ReportReady(context.Background(), env, &seed.Seed{Datasource: "Azure"}); err == nil || !strings.Contains(err.Error(), "post the health report") {
		t.Errorf("a refused health report gave %v", err)
	}
}

// TestReadyReporterFor checks that only clouds that want a report get
// one.
func TestWireserverBase(t *testing.T) {
	for _, tt := range []struct {
		options  map[uint8][]byte
		settings map[string]any
		want     string
	}{
		{nil, nil, "http://168.63.129.16"},
		{map[uint8][]byte{245: {10, 77, 0, 245}}, nil, "http://10.77.0.245"},
		{map[uint8][]byte{245: {10, 77, 0}}, nil, "http://168.63.129.16"}, // malformed: ignored
		{map[uint8][]byte{245: {10, 77, 0, 245}}, map[string]any{"wireserver_url": "http://127.0.0.1:8080/"}, "http://127.0.0.1:8080"},
	} {
		if got := wireserverBase(&Env{DHCPSiteOptions: tt.options}, tt.settings); got != tt.want {
			t.Errorf("wireserverBase(%v, %v) = %q, want %q", tt.options, tt.settings, got, tt.want)
		}
	}
}

func TestReadyReporterFor(t *testing.T) {
	for name, want := range map[string]bool{"Azure": true, "azure": true, "NoCloud": false, "Ec2": false, "OpenStack": false, "no-such-source": false} {
		if _, got := ReadyReporterFor(&seed.Seed{Datasource: name}); got != want {
			t.Errorf("ReadyReporterFor(%s) = %v, want %v", name, got, want)
		}
	}
}

// azureReadyOracle parses the goal state with cloud-init's GoalState and
// builds its health report, so that ours can be compared.
const azureReadyOracle = `
import json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit.sources.helpers import azure
goal = azure.GoalState(sys.stdin.read(), None, need_certificate=False)
reporter = azure.GoalStateHealthReporter(goal, None, "168.63.129.16")
report = reporter.build_report(incarnation=goal.incarnation, container_id=goal.container_id,
                               instance_id=goal.instance_id, status=reporter.PROVISIONING_SUCCESS_STATUS)
json.dump({"incarnation": goal.incarnation, "container": goal.container_id,
           "instance": goal.instance_id, "report": report}, sys.stdout)
`

// TestAzureReadyMatchesCloudInit compares the goal state as cloud-init
// 22.4.2 reads it and its health report with ours, element by element.
func TestAzureReadyMatchesCloudInit(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/python3 not found")
	}
	if err := exec.Command(py, "-c", "import cloudinit.sources.helpers.azure").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: cannot import cloudinit (install Debian's cloud-init package)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", azureReadyOracle)
	cmd.Stdin = strings.NewReader(azureGoalStateXML)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init's GoalState: %v\n%s", err, stderr.String())
	}
	var theirs struct{ Incarnation, Container, Instance, Report string }
	if err := json.Unmarshal(out, &theirs); err != nil {
		t.Fatal(err)
	}
	gs, err := parseAzureGoalState([]byte(azureGoalStateXML))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(azureGoalState{theirs.Incarnation, theirs.Container, theirs.Instance}, gs); diff != "" {
		t.Errorf("goal state (-cloud-init +seedinit):\n%s", diff)
	}
	if diff := cmp.Diff(xmlElements(t, []byte(theirs.Report)), xmlElements(t, azureHealthReport(gs, "Ready"))); diff != "" {
		t.Errorf("health report (-cloud-init +seedinit):\n%s", diff)
	}
}

// xmlElements lists a document's elements as path=text, attributes as
// path@name=value, ignoring the whitespace between elements.
func xmlElements(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var path []string
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			path = append(path, x.Name.Local)
			for _, a := range x.Attr {
				out = append(out, strings.Join(path, "/")+"@"+a.Name.Space+":"+a.Name.Local+"="+a.Value)
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			if s := strings.TrimSpace(string(x)); s != "" {
				out = append(out, strings.Join(path, "/")+"="+s)
			}
		}
	}
}
