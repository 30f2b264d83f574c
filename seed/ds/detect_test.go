package ds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// loopbackFetcher refuses to dial anything but loopback: a test that
// would reach a real metadata address fails instead.
func loopbackFetcher(t *testing.T, opts FetchOptions) *Fetcher {
	f := NewFetcher(opts, testLogger(t))
	tr := f.Client.Transport.(*http.Transport).Clone()
	dialer := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("a test tried to reach %s", addr)
			return nil, fmt.Errorf("test refuses to dial %s", addr)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	f.Client.Transport = tr
	return f
}

// blackhole accepts connections and never answers.
func blackhole(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "http://" + l.Addr().String()
}

func TestDetect(t *testing.T) {
	cidata := map[string]string{"meta-data": "instance-id: iid-cidata\n", "user-data": "#cloud-config\n"}
	openstack := openStackServer(t, "2018-08-27")
	nocloudNet := noCloudServer(t, map[string]string{"/s/meta-data": "instance-id: iid-net\n", "/s/user-data": ""})
	appliance := applianceServer(t)
	hang := blackhole(t)
	vendorCfg := func(base string) map[string]any {
		return map[string]any{"base_url": base + "/acme/latest/", "headers": map[string]any{"X-Appliance": "waf"}, "dmi": map[string]any{"sys_vendor": "ACME"}}
	}
	type outcome struct{ Name, Outcome string }
	cases := []struct {
		name    string
		disks   map[string]string // device -> label of a seed disk
		dmi     MapDMI
		cmdline string
		list    []any
		ds      map[string]map[string]any
		chosen  string
		id      string
		outcome []outcome
	}{
		{
			name: "cidata before config-2", disks: map[string]string{"/dev/sr0": "cidata", "/dev/sr1": "config-2"},
			list: []any{"NoCloud", "ConfigDrive"}, chosen: "NoCloud", id: "iid-cidata",
			outcome: []outcome{{"NoCloud", OutcomeChosen}, {"ConfigDrive", OutcomeUnused}},
		},
		{
			name: "config drive on Nova: no metadata service needed", disks: map[string]string{"/dev/sr1": "config-2"},
			dmi: MapDMI{"product_name": "OpenStack Nova"}, list: []any{"NoCloud", "ConfigDrive", "OpenStack"},
			ds: map[string]map[string]any{"OpenStack": {"metadata_urls": []any{hang}}}, chosen: "ConfigDrive",
			id:      "b0fa911b-69d4-4476-bbe2-1c92bff6535c",
			outcome: []outcome{{"NoCloud", OutcomeSkipped}, {"ConfigDrive", OutcomeChosen}, {"OpenStack", OutcomeSkipped}},
		},
		{
			name: "Nova DMI, no drive: metadata service", dmi: MapDMI{"product_name": "OpenStack Nova"},
			list: []any{"NoCloud", "ConfigDrive", "OpenStack", "None"},
			ds:   map[string]map[string]any{"OpenStack": {"metadata_urls": []any{openstack.URL}}}, chosen: "OpenStack",
			id:      "b0fa911b-69d4-4476-bbe2-1c92bff6535c",
			outcome: []outcome{{"NoCloud", OutcomeSkipped}, {"ConfigDrive", OutcomeSkipped}, {"OpenStack", OutcomeChosen}},
		},
		{
			name: "ci.ds names a source its probe would rule out", cmdline: "quiet ci.ds=OpenStack",
			list: []any{"NoCloud"},
			ds:   map[string]map[string]any{"OpenStack": {"metadata_urls": []any{openstack.URL}}}, chosen: "OpenStack",
			id:      "b0fa911b-69d4-4476-bbe2-1c92bff6535c",
			outcome: []outcome{{"OpenStack", OutcomeChosen}},
		},
		{
			name: "ds=nocloud-net with a URL", cmdline: "ds=nocloud-net;s=" + nocloudNet.URL + "/s/",
			list: []any{"NoCloud", "ConfigDrive"}, chosen: "NoCloud", id: "iid-net",
			outcome: []outcome{{"NoCloud", OutcomeChosen}}, // ds= names the source
		},
		{
			name: "earlier source hangs, later one answers", dmi: MapDMI{"product_name": "OpenStack Nova", "sys_vendor": "ACME"},
			list: []any{"OpenStack", "VendorHTTP"},
			ds: map[string]map[string]any{
				"OpenStack":  {"metadata_urls": []any{hang}},
				"VendorHTTP": vendorCfg(appliance.URL),
			},
			chosen: "VendorHTTP", id: "5f2c-appliance-01",
			outcome: []outcome{{"OpenStack", OutcomeFailed}, {"VendorHTTP", OutcomeChosen}},
		},
		{
			name: "seedinit.ds wins over ci.ds", cmdline: "ci.ds=OpenStack seedinit.ds=VendorHTTP",
			ds:     map[string]map[string]any{"VendorHTTP": {"base_url": appliance.URL + "/acme/latest/", "headers": map[string]any{"X-Appliance": "waf"}}},
			chosen: "VendorHTTP", id: "5f2c-appliance-01",
			outcome: []outcome{{"VendorHTTP", OutcomeChosen}},
		},
		{
			name: "nothing there", list: []any{"NoCloud", "ConfigDrive", "OpenStack", "Bogus"},
			ds:      map[string]map[string]any{"OpenStack": {"metadata_urls": []any{hang}}},
			outcome: []outcome{{"NoCloud", OutcomeSkipped}, {"ConfigDrive", OutcomeSkipped}, {"OpenStack", OutcomeSkipped}, {"Bogus", OutcomeSkipped}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			devs := FileDevices{}
			for dev, label := range tc.disks {
				files := cidata
				if strings.EqualFold(label, "config-2") {
					files = openStackTree(t, "latest")
				}
				devs[dev] = dstest.ISO(t, label, files, "-J", "-r")
			}
			env := newTestEnv(t, devs, tc.dmi, tc.cmdline)
			env.Fetcher = loopbackFetcher(t, FetchOptions{Timeout: 200 * time.Millisecond, Retries: NoRetries})
			cfg, err := ParseConfig(map[string]any{"datasource_list": tc.list})
			if err != nil {
				t.Fatal(err)
			}
			if tc.list == nil {
				cfg.DatasourceList = []string{"None"}
			}
			cfg.Datasource = tc.ds
			env.Config = cfg
			res, err := Detect(context.Background(), env, time.Second)
			var got []outcome
			for _, a := range res.Attempts {
				got = append(got, outcome{a.Datasource, a.Outcome})
			}
			if diff := cmp.Diff(tc.outcome, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if tc.chosen == "" {
				if !errors.Is(err, ErrNoDatasource) {
					t.Errorf("error = %v, want ErrNoDatasource", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if res.Datasource != tc.chosen || res.Seed.InstanceID != tc.id {
				t.Errorf("chose %s (%s), want %s (%s)", res.Datasource, res.Seed.InstanceID, tc.chosen, tc.id)
			}
			var out strings.Builder
			if err := PrintResult(&out, res, false); err != nil || !strings.Contains(out.String(), "datasource: "+tc.chosen) {
				t.Errorf("PrintResult = %v:\n%s", err, out.String())
			}
		})
	}
}

// TestDetectBudget: when nothing answers, the search gives up at its
// budget, long before the per-request timeouts or the caller's deadline.
func TestDetectBudget(t *testing.T) {
	hang := blackhole(t)
	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova", "sys_vendor": "ACME"}, "")
	env.Fetcher = loopbackFetcher(t, FetchOptions{Timeout: 30 * time.Second, Retries: 5})
	env.Config = Config{
		DatasourceList: []string{"OpenStack", "VendorHTTP"},
		Datasource: map[string]map[string]any{
			"OpenStack":  {"metadata_urls": []any{hang, hang}},
			"VendorHTTP": {"base_url": hang, "dmi": map[string]any{"sys_vendor": "ACME"}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Detect(ctx, env, 300*time.Millisecond)
	if !errors.Is(err, ErrNoDatasource) {
		t.Fatalf("error = %v, want ErrNoDatasource", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Detect ran into the caller's deadline instead of its budget")
	}
	for _, a := range res.Attempts {
		if a.Outcome != OutcomeFailed || !strings.Contains(a.Detail, "budget") {
			t.Errorf("%s: %s (%s), want failed for the budget", a.Datasource, a.Outcome, a.Detail)
		}
	}
}

func TestDetectLocalStage(t *testing.T) {
	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova"}, "")
	env.Fetcher = loopbackFetcher(t, FetchOptions{})
	env.Config = Config{DatasourceList: []string{"NoCloud", "OpenStack"}}
	res, err := DetectStage(context.Background(), env, time.Second, StageLocal)
	if !errors.Is(err, ErrNoDatasource) || !res.WantsNetwork {
		t.Fatalf("local stage = %v, wants network %v", err, res.WantsNetwork)
	}
}

func TestCmdlineDatasources(t *testing.T) {
	cases := []struct {
		line  string
		names []string
	}{
		{"ro quiet", nil},
		{"ds=nocloud;s=http://x/", []string{"nocloud"}},
		{"ci.ds=OpenStack,None", []string{"OpenStack", "None"}},
		{"ci.datasource=Ec2 ds=nocloud", []string{"Ec2"}},
		{"ci.ds=A ci.ds=B", []string{"B"}},
		{"ds=nocloud seedinit.ds=VendorHTTP", []string{"VendorHTTP"}},
		{"ds=", nil},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, _ := CmdlineDatasources(tc.line)
			if diff := cmp.Diff(tc.names, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	env := newTestEnv(t, nil, nil, "")
	writeTarget(t, env, map[string]string{
		"/etc/cloud/cloud.cfg":               "datasource_list: [NoCloud, ConfigDrive, Ec2]\ndatasource:\n  Ec2:\n    timeout: 5\n",
		"/etc/cloud/cloud.cfg.d/90_dpkg.cfg": "datasource_list: [ ConfigDrive, OpenStack, None ]\ndatasource:\n  OpenStack:\n    retries: 0\n",
		"/etc/cloud/cloud.cfg.d/99_seed.cfg": "seedinit_datasource:\n  budget: 1.5\n  timeout: 0.25\n  max_bytes: 1000\n",
		"/etc/cloud/cloud.cfg.d/bad.cfg":     "datasource_list: [\n",
		"/etc/cloud/cloud.cfg.d/ignored.txt": "datasource_list: [Nope]\n",
	})
	cfg, err := LoadConfig(env.Root)
	if err == nil || !strings.Contains(err.Error(), "bad.cfg") {
		t.Errorf("error = %v, want one naming bad.cfg", err)
	}
	if diff := cmp.Diff([]string{"ConfigDrive", "OpenStack", "None"}, cfg.DatasourceList); diff != "" {
		t.Errorf("datasource_list (-want +got):\n%s", diff)
	}
	if cfg.Budget != 1500*time.Millisecond || cfg.Fetch.Timeout != 250*time.Millisecond || cfg.Fetch.MaxBytes != 1000 {
		t.Errorf("own settings = %v %+v", cfg.Budget, cfg.Fetch)
	}
	if o := cfg.FetchOptionsFor("Ec2"); o.Timeout != 5*time.Second {
		t.Errorf("Ec2 timeout = %v", o.Timeout)
	}
	if o := cfg.FetchOptionsFor("openstack"); o.Retries != NoRetries {
		t.Errorf("OpenStack retries = %v", o.Retries)
	}
}
