package ds

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/ds/dstest"
	"github.com/seedinit/seedinit/seed/shacrypt"

	"github.com/seedinit/seedinit/internal/testenv"
)

// azureOvfOracle runs cloud-init 22.4's read_azure_ovf on each file named
// in argv and prints one JSON answer per line. encrypt_pass is replaced by
// a marker holding the password, so that the rest compares exactly and
// the test checks our hash against the password separately.
const azureOvfOracle = `
import base64, json, sys
from cloudinit.sources import DataSourceAzure as dsaz
from cloudinit.sources.helpers.azure import BrokenAzureDataSource, NonAzureDataSource
dsaz.encrypt_pass = lambda password, salt_id="$6$": "HASHED:" + password
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        data = f.read()
    try:
        md, ud, cfg = dsaz.read_azure_ovf(data)
    except NonAzureDataSource as e:
        print(json.dumps({"error": "not-azure"})); continue
    except BrokenAzureDataSource as e:
        print(json.dumps({"error": "broken"})); continue
    except Exception as e:
        print(json.dumps({"error": "failed"})); continue
    if isinstance(ud, str):
        ud = ud.encode()
    print(json.dumps({"md": md, "ud": base64.b64encode(ud).decode(), "cfg": cfg}))
`

type ovfAnswer struct {
	Error string         `json:"error"`
	MD    map[string]any `json:"md"`
	UD    string         `json:"ud"`
	Cfg   map[string]any `json:"cfg"`
}

// ourOvfAnswer is parseOvfEnv and config in the oracle's terms: the hash
// is checked against the password, then replaced by the oracle's marker.
func ourOvfAnswer(t *testing.T, data []byte) ovfAnswer {
	t.Helper()
	o, err := parseOvfEnv(data)
	switch {
	case errors.Is(err, errNotAzureOvf):
		return ovfAnswer{Error: "not-azure"}
	case err != nil && strings.Contains(err.Error(), "base64"):
		return ovfAnswer{Error: "failed"}
	case err != nil:
		return ovfAnswer{Error: "broken"}
	}
	hostname, ud, cfg, err := o.config(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	md := map[string]any{}
	if hostname != "" {
		md["local-hostname"] = hostname
	}
	if user, ok := cfg["system_info"].(map[string]any)["default_user"].(map[string]any); ok {
		if hash, ok := user["hashed_passwd"].(string); ok {
			if ok, err := shacrypt.CheckPassword(hash, *o.password); err != nil || !ok || !strings.HasPrefix(hash, "$6$") {
				t.Errorf("hashed_passwd %q does not check against the password (%v)", hash, err)
			}
			user["hashed_passwd"] = "HASHED:" + *o.password
		}
	}
	// Through JSON, as the oracle's answer came.
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return ovfAnswer{MD: md, UD: base64.StdEncoding.EncodeToString(ud), Cfg: back}
}

// TestAzureOvfMatchesCloudInit reads every fixture with cloud-init's
// read_azure_ovf and with ours: metadata, user-data and the datasource
// config must be the same, and so must the verdict on broken and foreign
// files.
func TestAzureOvfMatchesCloudInit(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceAzure").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: cannot import cloudinit.sources.DataSourceAzure (install Debian's cloud-init package)")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "azure", "ovf", "*.xml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", azureOvfOracle}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init's read_azure_ovf: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("oracle gave %d answers for %d files:\n%s", len(lines), len(files), out)
	}
	for i, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var theirs ovfAnswer
			if err := json.Unmarshal([]byte(lines[i]), &theirs); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ours := ourOvfAnswer(t, data)
			if diff := cmp.Diff(theirs, ours); diff != "" {
				t.Errorf("read_azure_ovf (-cloud-init +seedinit):\n%s", diff)
			}
			if strings.HasPrefix(filepath.Base(f), "broken-") && ours.Error == "" {
				t.Error("a broken fixture was accepted")
			}
		})
	}
}

// testSalt is what tests give as the salt's randomness.
var testSalt = bytes.Repeat([]byte("salt"), 64)

// TestAzureFetchWithOvf: ovf-env.xml on an ISO9660 disc and IMDS together.
// IMDS's names win, CustomData wins over IMDS userData, the password is
// only kept hashed and never logged.
func TestAzureFetchWithOvf(t *testing.T) {
	defer func(r io.Reader) { azureSaltRandom = r }(azureSaltRandom)
	azureSaltRandom = bytes.NewReader(testSalt)
	ovf, err := os.ReadFile(filepath.Join("testdata", "azure", "ovf", "password.xml"))
	if err != nil {
		t.Fatal(err)
	}
	iso := dstest.ISO(t, "rd_rdfe_stable", map[string]string{"ovf-env.xml": string(ovf)}, "-r", "-J")
	imds := fixtureServer(t, map[string]route{"/metadata/instance": {file: "azure/instance.json", header: "Metadata", value: "true"}}).URL
	var logs bytes.Buffer
	env := testEnv(imds+"/metadata/instance", nil, &logs)
	env.Devices = FileDevices{"/dev/sr0": iso}
	env.DMI = MapDMI{"product_uuid": "4E1B6F0A-7C3D-4B2A-9E8F-0A1B2C3D4E5F"}
	s, err := azureDatasource{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Subplatform != "config-disk (/dev/sr0)" {
		t.Errorf("Subplatform = %q", s.Subplatform)
	}
	if s.LocalHostname != "waf-az-01" {
		t.Errorf("LocalHostname = %q, want IMDS's computerName", s.LocalHostname)
	}
	if !bytes.Contains(s.UserData, []byte("from CustomData")) {
		t.Errorf("UserData = %q, want ovf-env.xml's CustomData", s.UserData)
	}
	user := s.Config["system_info"].(map[string]any)["default_user"].(map[string]any)
	if user["name"] != "azureuser" || user["lock_passwd"] != false {
		t.Errorf("default_user = %v, want IMDS's adminUsername, unlocked", user)
	}
	if ok, err := shacrypt.CheckPassword(user["hashed_passwd"].(string), "Corr3ct-Horse!"); err != nil || !ok {
		t.Errorf("hashed_passwd does not check: %v", err)
	}
	// The salt is azureSaltRandom's, not crypto/rand's, which in PID 1
	// blocks until the kernel's pool is ready.
	if want, _ := shacrypt.HashPassword("Corr3ct-Horse!", bytes.NewReader(testSalt)); user["hashed_passwd"] != want {
		t.Errorf("hashed_passwd = %q, want %q, salted from azureSaltRandom", user["hashed_passwd"], want)
	}
	if s.Config["ssh_pwauth"] != true {
		t.Errorf("ssh_pwauth = %v", s.Config["ssh_pwauth"])
	}
	if len(s.Keep) != 1 || s.Keep[0].Path != "/var/lib/waagent/ovf-env.xml" || s.Keep[0].Mode != 0o600 ||
		!bytes.Contains(s.Keep[0].Data, []byte(">REDACTED<")) || bytes.Contains(s.Keep[0].Data, []byte("Corr3ct-Horse!")) {
		t.Errorf("kept ovf-env.xml = %+v", s.Keep)
	}
	files, err := SeedFiles(s)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if bytes.Contains(data, []byte("Corr3ct-Horse!")) {
			t.Errorf("the saved seed's %s holds the password", name)
		}
	}
	if strings.Contains(logs.String(), "Corr3ct-Horse!") {
		t.Errorf("the password reached the log:\n%s", logs.String())
	}
}

// TestAzureOvfSearch: the seed directory first, then the discs, then the
// agent's copy; foreign and unreadable media are passed over, a broken
// ovf-env.xml fails, and IMDS failing is no failure when ovf-env.xml
// was read.
func TestAzureOvfSearch(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "azure", "ovf", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	newRoot := func(files map[string][]byte) *rootfs.Root {
		dir := t.TempDir()
		for p, data := range files {
			full := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		root, err := rootfs.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { root.Close() })
		return root
	}
	isoWith := func(name string, data []byte) string {
		return dstest.ISO(t, "rd_rdfe_stable", map[string]string{name: string(data)}, "-r", "-J")
	}
	tests := []struct {
		name      string
		root      map[string][]byte
		devices   FileDevices
		wantWhere string
		wantHost  string
		wantKeys  []string
		wantErr   bool
	}{
		{name: "seed directory before the disc",
			root:    map[string][]byte{azureSeedDir + "/ovf-env.xml": read("redacted.xml")},
			devices: FileDevices{"/dev/sr0": isoWith("ovf-env.xml", read("password.xml"))},
			// IMDS is down in this test: ovf-env.xml's host name serves.
			wantWhere: "seed-dir (" + azureSeedDir + ")", wantHost: "from-agent-copy"},
		{name: "another ISO9660 disc when /dev/sr0 is foreign",
			devices: FileDevices{
				"/dev/sr0": isoWith("ovf-env.xml", read("not-azure-no-provisioning.xml")),
				"/dev/sr1": isoWith("ovf-env.xml", read("keys-only-pps.xml"))},
			wantWhere: "config-disk (/dev/sr1)", wantHost: "keys-only",
			wantKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINvHhcInOuZ6EB75uX1jPHGhVObcp7rwgvcTwQUlONo2 admin@laptop"}},
		{name: "the agent's copy after the CD is gone",
			root:      map[string][]byte{azureAgentDir + "/ovf-env.xml": read("redacted.xml")},
			devices:   FileDevices{"/dev/sr0": isoWith("other.txt", []byte("x"))},
			wantWhere: "seed-dir (" + azureAgentDir + ")", wantHost: "from-agent-copy"},
		{name: "a broken ovf-env.xml fails the datasource",
			devices: FileDevices{"/dev/sr0": isoWith("ovf-env.xml", read("broken-no-username.xml"))},
			wantErr: true},
		{name: "no ovf-env.xml and no IMDS",
			devices: FileDevices{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv("http://127.0.0.1:1/metadata/instance", nil, nil)
			env.Devices = tt.devices
			env.Root = newRoot(tt.root)
			env.DMI = MapDMI{"product_uuid": "4E1B6F0A-7C3D-4B2A-9E8F-0A1B2C3D4E5F"}
			s, err := azureDatasource{}.Fetch(context.Background(), env)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Fetch succeeded: %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Subplatform != tt.wantWhere || s.LocalHostname != tt.wantHost {
				t.Errorf("from %q host %q, want %q host %q", s.Subplatform, s.LocalHostname, tt.wantWhere, tt.wantHost)
			}
			if !slices.Equal(s.PublicKeys, tt.wantKeys) {
				t.Errorf("keys %q, want ovf-env.xml's values %q (IMDS is down here)", s.PublicKeys, tt.wantKeys)
			}
		})
	}
}

// TestRedactOvfPasswordMatchesCloudInit keeps ovf-env.xml with cloud-init's
// write_files and with ours: read back, both say the same, the password
// is REDACTED in both, and ours changes no other byte.
func TestRedactOvfPasswordMatchesCloudInit(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceAzure").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: cannot import cloudinit.sources.DataSourceAzure (install Debian's cloud-init package)")
	}
	for _, name := range []string{"password.xml", "redacted.xml", "empty-values.xml", "keys-only-pps.xml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "azure", "ovf", name))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			out, err := exec.Command(py, "-c", `import sys
from cloudinit.sources import DataSourceAzure as dsaz
dsaz.write_files(sys.argv[1], {"ovf-env.xml": open(sys.argv[2], "rb").read()}, dirmode=0o700)`, dir, filepath.Join("testdata", "azure", "ovf", name)).CombinedOutput()
			if err != nil {
				t.Fatalf("cloud-init's write_files: %v\n%s", err, out)
			}
			theirs, err := os.ReadFile(filepath.Join(dir, "ovf-env.xml"))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := redactOvfPassword(data)
			if err != nil {
				t.Fatal(err)
			}
			a, errA := parseOvfEnv(theirs)
			b, errB := parseOvfEnv(ours)
			if errA != nil || errB != nil {
				t.Fatalf("read back: cloud-init's %v, ours %v", errA, errB)
			}
			a.source, b.source = nil, nil
			if diff := cmp.Diff(a, b, cmp.AllowUnexported(ovfEnv{})); diff != "" {
				t.Errorf("kept ovf-env.xml read back (-cloud-init +seedinit):\n%s", diff)
			}
			if bytes.Contains(ours, []byte("Corr3ct-Horse!")) {
				t.Error("the password is still in our copy")
			}
			if before, after, ok := bytes.Cut(data, []byte("<ns1:UserPassword>")); ok {
				_, rest, _ := bytes.Cut(after, []byte("</ns1:UserPassword>"))
				want := string(before) + "<ns1:UserPassword>REDACTED</ns1:UserPassword>" + string(rest)
				if string(ours) != want {
					t.Errorf("other bytes changed:\n%s", ours)
				}
			}
		})
	}
}

func TestRedactOvfPasswordForms(t *testing.T) {
	const head = `<E xmlns:wa="http://schemas.microsoft.com/windowsazure">`
	for in, want := range map[string]string{
		head + `<wa:UserPassword>s3cret &amp; more</wa:UserPassword></E>`:        head + `<wa:UserPassword>REDACTED</wa:UserPassword></E>`,
		head + `<wa:UserPassword><![CDATA[x]]><!-- c --></wa:UserPassword></E>`:  head + `<wa:UserPassword>REDACTED</wa:UserPassword></E>`,
		head + `<wa:UserPassword></wa:UserPassword></E>`:                         head + `<wa:UserPassword>REDACTED</wa:UserPassword></E>`,
		head + `<wa:UserPassword />` + "\n" + `<wa:UserName>u</wa:UserName></E>`: head + `<wa:UserPassword >REDACTED</wa:UserPassword>` + "\n" + `<wa:UserName>u</wa:UserName></E>`,
		head + `<wa:UserName>u</wa:UserName></E>`:                                head + `<wa:UserName>u</wa:UserName></E>`,
	} {
		got, err := redactOvfPassword([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("redactOvfPassword(%s)\n got %s, %v\nwant %s", in, got, err, want)
		}
	}
	if _, err := redactOvfPassword([]byte(head + `<wa:UserPassword>x`)); err == nil {
		t.Error("a broken file was redacted")
	}
	// Errors never quote the file: the password could be in the quote.
	bad := head + `<wa:ProvisioningSection><wa:UserPassword>pw&secret;</wa:UserPassword></wa:ProvisioningSection></E>`
	for _, err := range []error{func() error { _, err := parseOvfEnv([]byte(bad)); return err }(), func() error { _, err := redactOvfPassword([]byte(bad)); return err }()} {
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("error %v quotes the password (or is missing)", err)
		}
	}
}

func FuzzParseOvfEnv(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "azure", "ovf", "*.xml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseOvfEnv(data)
		if err != nil {
			return
		}
		if _, _, cfg, err := o.config(bytes.NewReader(make([]byte, 256))); err != nil || cfg == nil {
			t.Errorf("config of a parsed ovf-env.xml: %v", err)
		}
		// What parses is kept redacted, and still parses.
		redacted, err := redactOvfPassword(data)
		if err != nil {
			t.Fatalf("redact a parsed ovf-env.xml: %v", err)
		}
		r, err := parseOvfEnv(redacted)
		if err != nil {
			t.Fatalf("the redacted copy does not parse: %v", err)
		}
		if o.password != nil && *o.password != "" && (r.password == nil || *r.password != azurePasswordRedacted) {
			t.Errorf("password %q kept as %v", *o.password, r.password)
		}
	})
}
