package ds

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// oemStructure is an SMBIOS type 11 structure as the kernel's raw file
// gives it.
func oemStructure(strs ...string) []byte {
	b := []byte{11, 5, 0x00, 0x0b, byte(len(strs))}
	for _, s := range strs {
		b = append(b, s...)
		b = append(b, 0)
	}
	return append(b, 0)
}

// oemDMI is a DMI with OEM strings.
type oemDMI struct {
	MapDMI
	strs []string
}

func (d oemDMI) OEMStrings() []string { return d.strs }

func TestParseOEMStrings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     []byte
		want    []string
		wantErr string
	}{
		{"two strings", oemStructure("io.systemd.credential:a=b", "ds=nocloud"), []string{"io.systemd.credential:a=b", "ds=nocloud"}, ""},
		{"none", oemStructure(), []string{}, ""},
		// QEMU 7.2 writes a longer formatted part on no machine, but the
		// standard lets it grow: the strings start where its length says.
		{"longer formatted part", append([]byte{11, 7, 0, 0, 1, 0xaa, 0xbb}, "x\x00\x00"...), []string{"x"}, ""},
		{"too short", []byte{11, 5}, nil, "too short"},
		{"another type", append([]byte{1, 5, 0, 0, 0}, 0, 0), nil, "type 1"},
		{"length past the end", []byte{11, 40, 0, 0, 1}, nil, "out of range"},
		{"unterminated", []byte{11, 5, 0, 0, 1, 'a', 'b'}, []string{}, "no end"},
		{"fewer strings than counted", append([]byte{11, 5, 0, 0, 3}, "a\x00\x00"...), []string{"a"}, "1 strings where the structure says 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOEMStrings(tc.raw)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); tc.want != nil && diff != "" {
				t.Errorf("strings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadOEMStringsInTablesOrder(t *testing.T) {
	dir := t.TempDir()
	for name, raw := range map[string][]byte{
		"11-10": oemStructure("third"),
		"11-2":  oemStructure("first", "second"),
		"1-0":   append([]byte{1, 5, 0, 0, 0}, 0, 0), // another type: not read
		"11-3":  {11, 200, 0, 0, 1},                  // broken: reported, the rest read
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "raw"), raw, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readOEMStrings(dir)
	if diff := cmp.Diff([]string{"first", "second", "third"}, got); diff != "" {
		t.Errorf("strings (-want +got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), "11-3/raw") {
		t.Errorf("error %v, want one naming 11-3/raw", err)
	}
	if strs := (&SysDMI{EntriesDir: filepath.Join(dir, "missing")}).OEMStrings(); len(strs) != 0 {
		t.Errorf("no entries directory: %q", strs)
	}
}

func TestOEMCredentials(t *testing.T) {
	secret := "#cloud-config\npassword: hunter2\n"
	creds, errs := oemCredentials([]string{
		"io.systemd.credential:cloud-init.meta-data=instance-id: i-1",
		"io.systemd.credential.binary:cloud-init.user-data=" + base64.StdEncoding.EncodeToString([]byte(secret)),
		"io.systemd.credential:cloud-init.meta-data=instance-id: i-2", // a second value: the first stays
		"io.systemd.credential:no-equals-sign",
		"io.systemd.credential:../escape=x",
		"io.systemd.credential.binary:bad=not base64!",
		"cloud-init:ds=nocloud",
		"something else",
	})
	want := []Credential{
		{Name: "cloud-init.meta-data", Value: []byte("instance-id: i-1")},
		{Name: "cloud-init.user-data", Value: []byte(secret)},
	}
	if diff := cmp.Diff(want, creds); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	if len(errs) != 3 {
		t.Errorf("errors %v, want three (strings 4, 5, 6)", errs)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "not base64!") {
			t.Errorf("an error shows a credential's value: %v", err)
		}
	}
}

func TestNoCloudFromSMBIOSCredentials(t *testing.T) {
	env := &Env{DMI: oemDMI{strs: []string{
		"io.systemd.credential:cloud-init.meta-data=instance-id: smbios-1",
		"io.systemd.credential.binary:cloud-init.user-data=" + base64.StdEncoding.EncodeToString([]byte("#cloud-config\nhostname: waf-7\n")),
		"io.systemd.credential:cloud-init.network-config=version: 2",
	}}, Log: testLogger(t)}
	ev, err := noCloud{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != Found || !strings.Contains(ev.Reason, "SMBIOS OEM strings") {
		t.Fatalf("probe: %+v, %v", ev, err)
	}
	s, err := noCloud{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "smbios-1" || !strings.Contains(string(s.UserData), "waf-7") || string(s.NetworkConfig) != "version: 2" {
		t.Errorf("seed: instance %q, user-data %q, network-config %q", s.InstanceID, s.UserData, s.NetworkConfig)
	}
	if s.Subplatform != "smbios (smbios-credentials)" {
		t.Errorf("subplatform %q", s.Subplatform)
	}
}

// Meta-data alone is not a seed, as for a seed directory.
func TestNoCloudSMBIOSCredentialsNeedUserData(t *testing.T) {
	env := &Env{DMI: oemDMI{strs: []string{"io.systemd.credential:cloud-init.meta-data=instance-id: i-1"}}, Log: testLogger(t)}
	if ev, _ := (noCloud{}).Probe(context.Background(), env); ev.Verdict == Found {
		t.Errorf("probe found a seed in meta-data alone: %+v", ev)
	}
}

func TestNoCloudFromOEMStringArgs(t *testing.T) {
	for _, str := range []string{"cloud-init:ds=nocloud;i=oem-2;h=waf-oem", "ds=nocloud;i=oem-2;h=waf-oem"} {
		env := &Env{DMI: oemDMI{strs: []string{"io.systemd.credential:x=y", str}}, Log: testLogger(t)}
		ev, err := noCloud{}.Probe(context.Background(), env)
		if err != nil || ev.Verdict != Found || ev.Reason != "ds=nocloud in SMBIOS OEM string 2" {
			t.Fatalf("%s: probe %+v, %v", str, ev, err)
		}
		s, err := noCloud{}.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if s.InstanceID != "oem-2" || s.LocalHostname != "waf-oem" {
			t.Errorf("%s: instance %q, hostname %q", str, s.InstanceID, s.LocalHostname)
		}
	}
	// Another application's string is not NoCloud's.
	env := &Env{DMI: oemDMI{strs: []string{"anaconda:ds=nocloud;i=x"}}, Log: testLogger(t)}
	if ev, _ := (noCloud{}).Probe(context.Background(), env); ev.Verdict == Found {
		t.Errorf("probe took another application's string: %+v", ev)
	}
}
