package ds

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
)

// fakePasswordServer is CloudStack's virtual-router password server: it
// hands out the password once, until acknowledged.
type fakePasswordServer struct {
	password string
	mu       sync.Mutex
	saved    bool
	requests []string
}

func (p *fakePasswordServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req := r.Header.Get("DomU_Request")
	p.requests = append(p.requests, r.URL.Path+" "+req)
	switch req {
	case "send_my_password":
		if p.saved || p.password == "" {
			w.Write([]byte("saved_password"))
			return
		}
		w.Write([]byte(p.password + "\n"))
	case "saved_password":
		p.saved = true
		w.Write([]byte("saved_password"))
	default:
		w.Write([]byte("bad_request"))
	}
}

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func TestEC2StyleClouds(t *testing.T) {
	const password = `p4ss: "w0rd" #1`
	tests := []struct {
		name    string
		ds      Datasource
		fixture string
		// env adjusts the Env for the metadata and password servers.
		env          func(t *testing.T, env *Env, metadataURL, passwordURL string)
		want         *seed.Seed
		wantPassword bool
	}{
		{
			name: "AliYun", ds: aliYunDatasource{}, fixture: "aliyun/metadata.json",
			want: &seed.Seed{
				Datasource: "AliYun", Platform: "aliyun", CloudName: "aliyun",
				InstanceID: "i-bp1waf0appliance0001", LocalHostname: "iZwaf01appliance",
				Region: "cn-hangzhou", AvailabilityZone: "cn-hangzhou-h",
				PublicKeys:    []string{"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQAliyunFixtureKey root@aliyun"},
				UserData:      []byte("#cloud-config\nruncmd: [echo aliyun]\n"),
				NetworkFormat: "ec2",
			},
		},
		{
			name: "Exoscale", ds: exoscaleDatasource{}, fixture: "exoscale/metadata.json",
			env: func(t *testing.T, env *Env, _, passwordURL string) {
				env.Config.Datasource = map[string]map[string]any{"Exoscale": {"password_server_port": portOf(t, passwordURL)}}
			},
			want: &seed.Seed{
				Datasource: "Exoscale", Platform: "exoscale", CloudName: "exoscale",
				InstanceID: "5f0b6b55-7f1c-4c3d-9d3a-0123456789ab", LocalHostname: "waf-exo-01",
				AvailabilityZone: "ch-gva-2",
				PublicKeys:       []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExoscaleFixtureKey ops@example"},
				UserData:         []byte("#cloud-config\nhostname: waf-exo-01\n"),
			},
			wantPassword: true,
		},
		{
			name: "CloudStack via the DHCP server", ds: cloudStackDatasource{}, fixture: "cloudstack/metadata.json",
			env: func(t *testing.T, env *Env, metadataURL, passwordURL string) {
				u, _ := url.Parse(metadataURL)
				env.Endpoint = ""
				env.DHCPServer = netip.MustParseAddr(u.Hostname())
				// The fixture servers listen on random ports, not 80.
				env.Config.Datasource = map[string]map[string]any{"CloudStack": {
					"metadata_url": metadataURL, "password_server_port": portOf(t, passwordURL)}}
			},
			want: &seed.Seed{
				Datasource: "CloudStack", Platform: "cloudstack", CloudName: "cloudstack",
				InstanceID: "i-2-23-VM", LocalHostname: "waf-cs-01",
				AvailabilityZone: "zone-waf-1",
				PublicKeys:       []string{"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCloudStackFixtureKey admin@cs"},
				UserData:         []byte("#!/bin/sh\necho cloudstack\n"),
			},
			wantPassword: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imds := newFakeIMDS(t, tt.fixture)
			srv := httptest.NewServer(imds)
			defer srv.Close()
			pw := &fakePasswordServer{password: password}
			pwSrv := httptest.NewServer(pw)
			defer pwSrv.Close()
			var logs bytes.Buffer
			env := testEnv(srv.URL, nil, &logs)
			if tt.env != nil {
				tt.env(t, env, srv.URL, pwSrv.URL)
			}
			got, err := tt.ds.Fetch(context.Background(), env)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if strings.Contains(logs.String(), "w0rd") {
				t.Errorf("the password reached the log:\n%s", logs.String())
			}
			if tt.wantPassword {
				want := map[string]any{"password": password, "chpasswd": map[string]any{"expire": false}, "ssh_pwauth": true}
				if diff := cmp.Diff(want, got.Config); diff != "" {
					t.Errorf("password config (-want +got):\n%s", diff)
				}
				if !pw.saved {
					t.Errorf("the password was not acknowledged: %q", pw.requests)
				}
				got.Config = nil
			}
			got.Metadata, got.NetworkConfig, got.Subplatform = nil, nil, ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("seed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloudStackWithoutRouter(t *testing.T) {
	_, err := cloudStackDatasource{}.Fetch(context.Background(), testEnv("", nil, nil))
	if err == nil || !strings.Contains(err.Error(), "no virtual router") {
		t.Errorf("Fetch error = %v, want one about the virtual router", err)
	}
}

func TestPasswordServerAnswers(t *testing.T) {
	tests := []struct {
		answer, want string
		wantErr      bool
	}{
		{answer: "", want: ""},
		{answer: "saved_password", want: ""},
		{answer: "bad_request", wantErr: true},
		{answer: "s3cret\n", want: "s3cret"},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(tt.answer))
			}))
			defer srv.Close()
			got, err := fetchPassword(context.Background(), newMetadataClient(testEnv("", nil, nil), "CloudStack"), srv.URL)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("fetchPassword = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestEC2StyleProbes(t *testing.T) {
	tests := []struct {
		ds   Datasource
		dmi  MapDMI
		want Verdict
	}{
		{aliYunDatasource{}, MapDMI{"product_name": "Alibaba Cloud ECS"}, Found},
		{aliYunDatasource{}, MapDMI{"product_name": "KVM"}, NotFound},
		{exoscaleDatasource{}, MapDMI{"product_name": "Exoscale Compute Platform"}, Found},
		{exoscaleDatasource{}, MapDMI{}, NotFound},
		{cloudStackDatasource{}, MapDMI{"product_name": "CloudStack KVM Hypervisor"}, Found},
		{cloudStackDatasource{}, MapDMI{"product_name": "OpenStack Nova"}, NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.ds.Name()+"/"+tt.dmi["product_name"], func(t *testing.T) {
			ev, err := tt.ds.Probe(context.Background(), &Env{DMI: tt.dmi})
			if err != nil || ev.Verdict != tt.want {
				t.Errorf("Probe = %v (%s), %v; want %v", ev.Verdict, ev.Reason, err, tt.want)
			}
		})
	}
}
