package seedimg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
)

const (
	userData      = "#cloud-config\nhostname: waf-01\nruncmd: [echo hi]\n"
	vendorData    = "#cloud-config\npackages: [htop]\n"
	networkData   = `{"links":[{"id":"eth0","type":"phy","ethernet_mac_address":"52:54:00:12:34:56"}],"networks":[{"id":"n0","link":"eth0","type":"ipv4_dhcp"}],"services":[]}`
	networkConfig = "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"
	noCloudMeta   = "instance-id: i-0123\nlocal-hostname: waf-01.example.com\npublic-keys:\n  - ssh-ed25519 AAAAC3Nza admin@laptop\n  - ssh-rsa AAAAB3Nza ops@bastion\n"
)

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func TestLayoutNoCloud(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want map[string]string
	}{
		{
			name: "every file",
			o:    Options{MetaData: []byte(noCloudMeta), UserData: []byte(userData), VendorData: []byte(vendorData), NetworkConfig: []byte(networkConfig)},
			want: map[string]string{"meta-data": noCloudMeta, "user-data": userData, "vendor-data": vendorData, "network-config": networkConfig},
		},
		{
			name: "nothing given: cloud-localds' defaults",
			o:    Options{},
			want: map[string]string{"meta-data": "instance-id: iid-local01\n", "user-data": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Layout(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range files {
				got[k] = string(v)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("layout (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLayoutConfigDrive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        Options
		wantMeta map[string]any
		wantEC2  map[string]any
		wantVD   any
	}{
		{
			name: "from NoCloud meta-data",
			o:    Options{MetaData: []byte(noCloudMeta), UserData: []byte(userData), VendorData: []byte(vendorData), NetworkConfig: []byte(networkData)},
			wantMeta: map[string]any{
				"uuid": "i-0123", "hostname": "waf-01.example.com", "name": "waf-01", "launch_index": 0.0,
				"public_keys": map[string]any{"key-0": "ssh-ed25519 AAAAC3Nza admin@laptop", "key-1": "ssh-rsa AAAAB3Nza ops@bastion"},
				"keys": []any{
					map[string]any{"name": "key-0", "type": "ssh", "data": "ssh-ed25519 AAAAC3Nza admin@laptop"},
					map[string]any{"name": "key-1", "type": "ssh", "data": "ssh-rsa AAAAB3Nza ops@bastion"},
				},
			},
			wantEC2: map[string]any{
				"instance-id": "i-0123", "hostname": "waf-01.example.com", "local-hostname": "waf-01.example.com", "ami-launch-index": 0.0,
				"public-keys": map[string]any{"0": map[string]any{"openssh-key": "ssh-ed25519 AAAAC3Nza admin@laptop"}, "1": map[string]any{"openssh-key": "ssh-rsa AAAAB3Nza ops@bastion"}},
			},
			wantVD: vendorData,
		},
		{
			name: "from OpenStack meta_data.json, kept as given",
			o: Options{
				MetaData:   []byte(`{"uuid":"83679162-1378-4288-a2d4-70e13ec132aa","hostname":"test.novalocal","name":"test","availability_zone":"nova","launch_index":0,"project_id":"p1","meta":{"role":"waf"},"public_keys":{"mykey":"ssh-rsa AAAAB3Nza me@host\n"}}`),
				VendorData: []byte(`{"cloud-init":"#cloud-config\npackages: [htop]\n"}`),
			},
			wantMeta: map[string]any{
				"uuid": "83679162-1378-4288-a2d4-70e13ec132aa", "hostname": "test.novalocal", "name": "test", "availability_zone": "nova",
				"launch_index": 0.0, "project_id": "p1", "meta": map[string]any{"role": "waf"},
				"public_keys": map[string]any{"mykey": "ssh-rsa AAAAB3Nza me@host"},
				"keys":        []any{map[string]any{"name": "mykey", "type": "ssh", "data": "ssh-rsa AAAAB3Nza me@host"}},
			},
			wantEC2: map[string]any{
				"instance-id": "83679162-1378-4288-a2d4-70e13ec132aa", "hostname": "test.novalocal", "local-hostname": "test.novalocal",
				"ami-launch-index": 0.0, "placement": map[string]any{"availability-zone": "nova"},
				"public-keys": map[string]any{"0": map[string]any{"openssh-key": "ssh-rsa AAAAB3Nza me@host"}},
			},
			wantVD: map[string]any{"cloud-init": "#cloud-config\npackages: [htop]\n"},
		},
		{
			name:     "no meta-data: cloud-localds' instance-id",
			o:        Options{},
			wantMeta: map[string]any{"uuid": "iid-local01", "launch_index": 0.0},
			wantEC2:  map[string]any{"instance-id": "iid-local01", "ami-launch-index": 0.0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Kind = ConfigDrive
			files, err := Layout(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, ver := range []string{"2012-08-10", "latest"} {
				dir := "openstack/" + ver + "/"
				if diff := cmp.Diff(any(tc.wantMeta), decodeJSON(t, files[dir+"meta_data.json"])); diff != "" {
					t.Errorf("%smeta_data.json (-want +got):\n%s", dir, diff)
				}
				if got := string(files[dir+"user_data"]); got != string(tc.o.UserData) {
					t.Errorf("%suser_data = %q, want %q", dir, got, tc.o.UserData)
				}
				if tc.wantVD != nil {
					if diff := cmp.Diff(tc.wantVD, decodeJSON(t, files[dir+"vendor_data.json"])); diff != "" {
						t.Errorf("%svendor_data.json (-want +got):\n%s", dir, diff)
					}
				}
				if tc.o.NetworkConfig != nil {
					if diff := cmp.Diff(decodeJSON(t, tc.o.NetworkConfig), decodeJSON(t, files[dir+"network_data.json"])); diff != "" {
						t.Errorf("%snetwork_data.json (-want +got):\n%s", dir, diff)
					}
				}
			}
			for _, ver := range []string{"2009-04-04", "latest"} {
				name := "ec2/" + ver + "/meta-data.json"
				if diff := cmp.Diff(any(tc.wantEC2), decodeJSON(t, files[name])); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestLayoutErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want []string
	}{
		{"network-config not network_data.json", Options{Kind: ConfigDrive, NetworkConfig: []byte(networkConfig)}, []string{"network_data.json"}},
		{"meta-data without instance-id", Options{Kind: ConfigDrive, MetaData: []byte("local-hostname: h\n")}, []string{"no instance-id"}},
		{"meta-data not a mapping", Options{Kind: ConfigDrive, MetaData: []byte("- a\n- b\n")}, []string{"want a mapping"}},
		{"meta-data bad YAML", Options{Kind: ConfigDrive, MetaData: []byte("a: [\n")}, []string{"parse meta-data", "line"}},
		{"bad key and bad network together", Options{Kind: ConfigDrive, MetaData: []byte("instance-id: i\npublic-keys: [[x]]\n"), NetworkConfig: []byte("x")}, []string{"public-keys item 0", "network_data.json"}},
		{"unknown kind", Options{Kind: "gce"}, []string{`unknown kind "gce"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Layout(tc.o)
			if err == nil {
				t.Fatal("Layout succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		fmt  Format
	}{
		{"nocloud", NoCloud, ""}, {"cidata", NoCloud, ""}, {"configdrive", ConfigDrive, ""}, {"config-2", ConfigDrive, ""},
		{"iso", "", ISO}, {"iso9660", "", ISO}, {"vfat", "", VFAT}, {"fat", "", VFAT},
	} {
		t.Run(tc.in, func(t *testing.T) {
			k, kerr := ParseKind(tc.in)
			f, ferr := ParseFormat(tc.in)
			if tc.kind != "" && (kerr != nil || k != tc.kind) {
				t.Errorf("ParseKind(%q) = %q, %v; want %q", tc.in, k, kerr, tc.kind)
			}
			if tc.fmt != "" && (ferr != nil || f != tc.fmt) {
				t.Errorf("ParseFormat(%q) = %q, %v; want %q", tc.in, f, ferr, tc.fmt)
			}
		})
	}
	if _, err := ParseKind("ec2"); err == nil {
		t.Error("ParseKind(ec2) succeeded")
	}
	if _, err := ParseFormat("ext4"); err == nil {
		t.Error("ParseFormat(ext4) succeeded")
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	ud := filepath.Join(dir, "ud")
	os.WriteFile(ud, []byte(userData), 0o644)
	var o Options
	err := o.ReadFiles(ud, filepath.Join(dir, "missing"), "", "")
	if err == nil || !strings.Contains(err.Error(), "--meta-data") {
		t.Errorf("ReadFiles error %v, want one naming --meta-data", err)
	}
	if string(o.UserData) != userData || o.NetworkConfig != nil {
		t.Errorf("ReadFiles: user-data %q network-config %q", o.UserData, o.NetworkConfig)
	}
}

// imageCases are the four images the CLI can make, with everything in them.
func imageCases() []Options {
	var out []Options
	for _, f := range []Format{ISO, VFAT} {
		out = append(out,
			Options{Kind: NoCloud, Format: f, MetaData: []byte(noCloudMeta), UserData: []byte(userData), VendorData: []byte(vendorData), NetworkConfig: []byte(networkConfig)},
			Options{Kind: ConfigDrive, Format: f, MetaData: []byte(noCloudMeta), UserData: []byte(userData), VendorData: []byte(vendorData), NetworkConfig: []byte(networkData)},
		)
	}
	return out
}

func buildImage(t *testing.T, o Options) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), string(o.Kind)+"."+string(o.Format))
	if err := Build(img, o); err != nil {
		t.Fatalf("Build: %v", err)
	}
	return img
}

func TestBuildLabelAndSize(t *testing.T) {
	for _, o := range imageCases() {
		t.Run(string(o.Kind)+"/"+string(o.Format), func(t *testing.T) {
			img := buildImage(t, o)
			f, err := os.Open(img)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fsType, label, err := seed.ReadLabel(f)
			if err != nil {
				t.Fatalf("seed.ReadLabel: %v", err)
			}
			wantType := map[Format]string{ISO: "iso9660", VFAT: "vfat"}[o.Format]
			if fsType != wantType || label != o.label() {
				t.Errorf("seed.ReadLabel = %q %q, want %q %q", fsType, label, wantType, o.label())
			}
			fi, _ := f.Stat()
			if o.Kind == ConfigDrive && o.Format == VFAT && fi.Size() != 64<<20 {
				t.Errorf("config drive vfat is %d bytes, want Nova's 64 MiB", fi.Size())
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("image mode %o, want 0600: it holds user-data", fi.Mode().Perm())
			}
		})
	}
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "%s is not installed (apt-get install genisoimage mtools dosfstools)", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.Bytes())
	}
	return out
}

// extract reads every file back with Linux's own tools (isoinfo for
// ISO9660 through Rock Ridge, or Joliet; mtools for FAT), listing the image
// so that stray files show up too.
func extract(t *testing.T, img string, format Format, extension string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	switch format {
	case ISO:
		for _, line := range strings.Split(string(run(t, "isoinfo", extension, "-f", "-i", img)), "\n") {
			p := strings.TrimPrefix(line, "/")
			if p == "" {
				continue
			}
			data := run(t, "isoinfo", extension, "-i", img, "-x", line)
			if len(data) == 0 && isDirInISO(t, img, extension, line) {
				continue
			}
			got[p] = data
		}
	case VFAT:
		for _, line := range strings.Split(string(run(t, "mdir", "-/", "-b", "-i", img, "::")), "\n") {
			if line == "" || strings.HasSuffix(line, "/") {
				continue
			}
			p := strings.TrimPrefix(line, "::/")
			got[p] = run(t, "mcopy", "-n", "-i", img, line, "-")
		}
	}
	return got
}

func isDirInISO(t *testing.T, img, extension, p string) bool {
	out := run(t, "isoinfo", extension, "-l", "-i", img)
	return strings.Contains(string(out), "Directory listing of "+p+"/\n")
}

func stringMap(m map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestBuildReadByLinuxTools(t *testing.T) {
	for _, o := range imageCases() {
		t.Run(string(o.Kind)+"/"+string(o.Format), func(t *testing.T) {
			if o.Format == ISO {
				need(t, "isoinfo")
			} else {
				need(t, "mdir", "mcopy")
			}
			img := buildImage(t, o)
			want, err := Layout(o)
			if err != nil {
				t.Fatal(err)
			}
			extensions := []string{"-R"}
			if o.Format == VFAT {
				extensions = []string{""}
			} else if o.Kind == NoCloud {
				extensions = append(extensions, "-J")
			}
			for _, ext := range extensions {
				got := extract(t, img, o.Format, ext)
				if diff := cmp.Diff(stringMap(want), stringMap(got)); diff != "" {
					t.Errorf("files read back %s (-want +got):\n%s", ext, diff)
				}
			}
			if o.Format == ISO {
				info := string(run(t, "isoinfo", "-d", "-i", img))
				if !strings.Contains(info, "Volume id: "+o.label()+"\n") || !strings.Contains(info, "Rock Ridge signatures") {
					t.Errorf("isoinfo -d: want volume id %s and Rock Ridge:\n%s", o.label(), info)
				}
			}
			if o.Format == VFAT {
				if _, err := exec.LookPath("fsck.fat"); err == nil {
					if out, err := exec.Command("fsck.fat", "-n", img).CombinedOutput(); err != nil {
						t.Errorf("fsck.fat -n: %v\n%s", err, out)
					}
				}
				// blkid reads the label from the root directory's volume
				// entry (LABEL) and from the boot sector (LABEL_FATBOOT):
				// both must say it, as with mkfs.vfat -n.
				if _, err := exec.LookPath("blkid"); err == nil {
					export := string(run(t, "blkid", "-p", "-o", "export", img))
					for _, want := range []string{"LABEL=" + o.label() + "\n", "LABEL_FATBOOT=" + o.label() + "\n", "TYPE=vfat\n"} {
						if !strings.Contains(export, want) {
							t.Errorf("blkid -p: want %q in\n%s", want, export)
						}
					}
				}
			}
		})
	}
}

// TestBuildMountLoop mounts each image read-only through a loop device, as
// the guest does; it skips where the kernel has no iso9660 or vfat.
func TestBuildMountLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "mounting a loop device needs root")
	}
	for _, o := range imageCases() {
		t.Run(string(o.Kind)+"/"+string(o.Format), func(t *testing.T) {
			img := buildImage(t, o)
			fsType := map[Format]string{ISO: "iso9660", VFAT: "vfat"}[o.Format]
			mnt := t.TempDir()
			out, err := exec.Command("mount", "-t", fsType, "-o", "loop,ro", img, mnt).CombinedOutput()
			if err != nil {
				if strings.Contains(string(out), "unknown filesystem type") {
					// A kernel feature of the machine, not an install step:
					// these machines' containers have no iso9660 or vfat
					// driver. The image is checked by isoinfo, mtools, blkid
					// and cloud-init's readers above, and read by seedinit's
					// own reader in the e2e boots.
					testenv.SkipOptional(t, fmt.Sprintf("this kernel cannot mount %s (%s); isoinfo/mtools and cloud-init's readers check the image instead", fsType, strings.TrimSpace(string(out))))
				}
				t.Fatalf("mount %s: %v\n%s", img, err, out)
			}
			defer exec.Command("umount", mnt).Run()
			want, _ := Layout(o)
			got := map[string][]byte{}
			filepath.Walk(mnt, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					rel, _ := filepath.Rel(mnt, p)
					got[filepath.ToSlash(rel)], _ = os.ReadFile(p)
				}
				return nil
			})
			if diff := cmp.Diff(stringMap(want), stringMap(got)); diff != "" {
				t.Errorf("mounted files (-want +got):\n%s", diff)
			}
		})
	}
}

const oracleScript = `
import json, sys
from cloudinit import util
kind, d = sys.argv[1], sys.argv[2]
def text(v):
    return v.decode() if isinstance(v, bytes) else v
if kind == "configdrive":
    from cloudinit.sources import DataSourceConfigDrive as cd
    from cloudinit.sources import normalize_pubkey_data
    r = cd.read_config_drive(d)
    md = r["metadata"]
    out = {
        "instance-id": md.get("instance-id"),
        "local-hostname": md.get("local-hostname"),
        "public-keys": sorted(normalize_pubkey_data(md.get("public_keys"))),
        "user-data": text(r.get("userdata")),
        "vendor-data": text(r.get("vendordata")),
        "network-data": r.get("networkdata"),
        "ec2-instance-id": r.get("ec2-metadata", {}).get("instance-id"),
    }
else:
    from cloudinit.sources import normalize_pubkey_data
    s = util.pathprefix2dict(d, required=["user-data", "meta-data"], optional=["vendor-data", "network-config"])
    md = util.load_yaml(s["meta-data"])
    out = {
        "instance-id": md.get("instance-id"),
        "local-hostname": md.get("local-hostname"),
        "public-keys": sorted(normalize_pubkey_data(md.get("public-keys"))),
        "user-data": text(s["user-data"]),
        "vendor-data": text(s.get("vendor-data")),
        "network-data": util.load_yaml(s["network-config"]) if "network-config" in s else None,
        "ec2-instance-id": None,
    }
print(json.dumps(out, sort_keys=True))
`

func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "no /usr/bin/python3: cloud-init's readers are the oracle (apt-get install cloud-init)")
	}
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceConfigDrive").Run(); err != nil {
		testenv.Skip(t, "cloud-init is not installed for /usr/bin/python3 (apt-get install cloud-init)")
	}
	return py
}

// TestCloudInitReadsImages reads each image's files, extracted with the
// Linux tools, with cloud-init's own readers: read_config_drive for a config
// drive, NoCloud's pathprefix2dict for cidata.
func TestCloudInitReadsImages(t *testing.T) {
	py := cloudInitPython(t)
	for _, o := range imageCases() {
		t.Run(string(o.Kind)+"/"+string(o.Format), func(t *testing.T) {
			if o.Format == ISO {
				need(t, "isoinfo")
			} else {
				need(t, "mdir", "mcopy")
			}
			img := buildImage(t, o)
			ext := "-R"
			if o.Format == VFAT {
				ext = ""
			}
			dir := t.TempDir()
			if err := writeTree(dir, extract(t, img, o.Format, ext)); err != nil {
				t.Fatal(err)
			}
			out := run(t, py, "-c", oracleScript, string(o.Kind), dir)
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("cloud-init's output %q: %v", out, err)
			}
			want := map[string]any{
				"instance-id":     "i-0123",
				"local-hostname":  "waf-01.example.com",
				"public-keys":     []any{"ssh-ed25519 AAAAC3Nza admin@laptop", "ssh-rsa AAAAB3Nza ops@bastion"},
				"user-data":       userData,
				"vendor-data":     vendorData,
				"network-data":    map[string]any{"version": 2.0, "ethernets": map[string]any{"eth0": map[string]any{"dhcp4": true}}},
				"ec2-instance-id": nil,
			}
			if o.Kind == ConfigDrive {
				want["network-data"] = decodeJSON(t, []byte(networkData))
				want["ec2-instance-id"] = "i-0123"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("what cloud-init read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildAgainstGenisoimage compares our config drive's tree with the one
// genisoimage -J -r makes from the same files, as Nova does.
func TestBuildAgainstGenisoimage(t *testing.T) {
	need(t, "genisoimage", "isoinfo")
	o := imageCases()[1]
	files, err := Layout(o)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := writeTree(src, files); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(t.TempDir(), "ref.iso")
	run(t, "genisoimage", "-quiet", "-o", ref, "-V", "config-2", "-J", "-r", src)
	ours := buildImage(t, o)
	list := func(img string) []string {
		lines := strings.Split(strings.TrimSpace(string(run(t, "isoinfo", "-R", "-f", "-i", img))), "\n")
		sort.Strings(lines)
		return lines
	}
	if diff := cmp.Diff(list(ref), list(ours)); diff != "" {
		t.Errorf("Rock Ridge tree (-genisoimage +ours):\n%s", diff)
	}
}

// FuzzLayout feeds untrusted meta-data and network-config through both
// layouts: errors are fine, panics are not, and whatever is laid out must
// be valid JSON where the layout promises JSON.
func FuzzLayout(f *testing.F) {
	f.Add([]byte(noCloudMeta), []byte(networkData))
	f.Add([]byte(`{"uuid":"u","public_keys":{"k":"ssh-rsa A"},"keys":[{"name":"k","data":"ssh-rsa B"}]}`), []byte("{}"))
	f.Add([]byte("instance-id: i\npublic-keys: {a: {openssh-key: x}, b: [y, z]}\nplacement: {availability-zone: az1}\n"), []byte(networkConfig))
	f.Add([]byte("&a [*a]"), []byte("null"))
	f.Add([]byte("instance-id: .nan\nlocal-hostname: 1e3\n"), []byte(""))
	f.Fuzz(func(t *testing.T, meta, network []byte) {
		if _, err := Layout(Options{Kind: NoCloud, MetaData: meta, NetworkConfig: network}); err != nil {
			t.Fatalf("NoCloud layout never fails: %v", err)
		}
		files, err := Layout(Options{Kind: ConfigDrive, MetaData: meta, NetworkConfig: network})
		if err != nil {
			return
		}
		for name, b := range files {
			if strings.HasSuffix(name, ".json") && !json.Valid(b) {
				t.Fatalf("%s is not valid JSON: %q", name, b)
			}
		}
	})
}

// TestBuildFATPassesFsck checks the images fsck.fat sees as clean, empty
// files and nested directories included.
func TestBuildFATPassesFsck(t *testing.T) {
	need(t, "fsck.fat", "mcopy")
	for _, o := range []Options{
		{Kind: NoCloud, Format: VFAT},
		{Kind: NoCloud, Format: VFAT, UserData: []byte(userData), VendorData: []byte{}},
		{Kind: ConfigDrive, Format: VFAT, UserData: []byte{}},
		{Kind: ConfigDrive, Format: VFAT, Size: 300 << 20, UserData: bytes.Repeat([]byte("x"), 100000)},
	} {
		t.Run(fmt.Sprintf("%s/%d-byte user-data/%d", o.Kind, len(o.UserData), o.Size), func(t *testing.T) {
			img := buildImage(t, o)
			if out, err := exec.Command("fsck.fat", "-n", img).CombinedOutput(); err != nil {
				t.Errorf("fsck.fat -n: %v\n%s", err, out)
			}
			want, _ := Layout(o)
			if diff := cmp.Diff(stringMap(want), stringMap(extract(t, img, VFAT, ""))); diff != "" {
				t.Errorf("files read back (-want +got):\n%s", diff)
			}
		})
	}
}

// With Sign, each directory of parts gets one manifest over the parts a
// reader takes, by role, and its signature; Nova's ec2/ copies and
// vendor_data.json are no part of it.
func TestLayoutSigned(t *testing.T) {
	sign := func(in SignInput) ([]byte, []byte, error) {
		var roles []string
		for r, c := range in.Parts {
			roles = append(roles, r+"="+string(c))
		}
		for p, c := range in.Files {
			roles = append(roles, "file "+p+"="+string(c))
		}
		sort.Strings(roles)
		return []byte(strings.Join(roles, ";")), []byte("SIG"), nil
	}
	nc, err := Layout(Options{MetaData: []byte("instance-id: a\n"), UserData: []byte("#cloud-config\n"), Sign: sign})
	if err != nil {
		t.Fatal(err)
	}
	if string(nc["seed-manifest"]) != "meta-data=instance-id: a\n;user-data=#cloud-config\n" || string(nc["seed-manifest.sig"]) != "SIG" || len(nc) != 4 {
		t.Errorf("NoCloud files: %q", nc)
	}
	cd, err := Layout(Options{Kind: ConfigDrive, MetaData: []byte("instance-id: a\n"), UserData: []byte("x"), VendorData: []byte("v"), Sign: sign})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"openstack/latest", "openstack/2012-08-10"} {
		m := string(cd[dir+"/seed-manifest"])
		if !strings.HasPrefix(m, "meta-data={") || !strings.HasSuffix(m, ";user-data=x") || string(cd[dir+"/seed-manifest.sig"]) != "SIG" {
			t.Errorf("%s: manifest %q", dir, m)
		}
	}
	for name := range cd {
		if strings.HasPrefix(name, "ec2/") && strings.Contains(name, "seed-manifest") {
			t.Errorf("%s signed", name)
		}
	}
}

// Injected files on a config drive are laid out as Nova lays them out
// (openstack/content/NNNN, named in meta_data.json's files), and a signed
// drive's manifest lists them by path.
func TestLayoutInjectedFiles(t *testing.T) {
	var signed []string
	sign := func(in SignInput) ([]byte, []byte, error) {
		for p, c := range in.Files {
			signed = append(signed, p+"="+string(c))
		}
		return []byte("M"), []byte("S"), nil
	}
	o := Options{Kind: ConfigDrive, MetaData: []byte("instance-id: a\n"), Sign: sign,
		Files: []seed.InjectedFile{{Path: "/etc/fortinet/license.lic", Content: []byte("L")}, {Path: "/etc/motd", Content: []byte("hi")}}}
	files, err := Layout(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(files["openstack/content/0000"]) != "L" || string(files["openstack/content/0001"]) != "hi" {
		t.Errorf("content: %q", files)
	}
	var md struct {
		Files []map[string]string `json:"files"`
	}
	if err := json.Unmarshal(files["openstack/latest/meta_data.json"], &md); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"path": "/etc/fortinet/license.lic", "content_path": "/content/0000"}, {"path": "/etc/motd", "content_path": "/content/0001"}}
	if diff := cmp.Diff(want, md.Files); diff != "" {
		t.Errorf("meta_data.json files (-want +got):\n%s", diff)
	}
	sort.Strings(signed)
	if got := strings.Join(signed, ","); got != "/etc/fortinet/license.lic=L,/etc/fortinet/license.lic=L,/etc/motd=hi,/etc/motd=hi" {
		t.Errorf("signed files (one manifest per version): %s", got)
	}
	for _, bad := range []Options{
		{Kind: NoCloud, Files: o.Files},
		{Kind: ConfigDrive, MetaData: []byte("instance-id: a\n"), Files: []seed.InjectedFile{{Path: "etc/x"}}},
		{Kind: ConfigDrive, MetaData: []byte("instance-id: a\nfiles: []\n"), Files: o.Files},
	} {
		if _, err := Layout(bad); err == nil {
			t.Errorf("Layout(%+v) made an image", bad)
		}
	}
}

// An OVF environment holds the seed as the vApp properties cloud-init's
// OVF datasource reads, and reads back as the parts given; signed, its
// manifest covers the parts as the datasource reads them.
func TestLayoutOVF(t *testing.T) {
	var signed map[string][]byte
	o := Options{Kind: OVF, MetaData: []byte(noCloudMeta), UserData: []byte(userData), NetworkConfig: []byte(networkConfig),
		Sign: func(in SignInput) ([]byte, []byte, error) {
			signed = in.Parts
			return []byte("M\n"), []byte("S\n"), nil
		}}
	files, err := Layout(o)
	if err != nil {
		t.Fatal(err)
	}
	doc := files["ovf-env.xml"]
	if len(files) != 1 || !bytes.Contains(doc, []byte(`oe:key="hostname" oe:value="waf-01.example.com"`)) ||
		!bytes.Contains(doc, []byte(`oe:key="public-keys" oe:value="ssh-ed25519 AAAAC3Nza admin@laptop&#10;ssh-rsa AAAAB3Nza ops@bastion"`)) {
		t.Errorf("ovf-env.xml:\n%s", doc)
	}
	parts, err := ds.OVFParts(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(parts["user-data"]) != userData || !strings.Contains(string(parts["network-config"]), `"network":{"ethernets"`) ||
		string(parts["meta-data"]) != `{"instance-id":"i-0123","local-hostname":"waf-01.example.com","public-keys":"ssh-ed25519 AAAAC3Nza admin@laptop\nssh-rsa AAAAB3Nza ops@bastion"}`+"\n" {
		t.Errorf("parts read back: %q", parts)
	}
	if diff := cmp.Diff(stringMap(parts), stringMap(signed)); diff != "" {
		t.Errorf("signed parts are not the parts read back (-read +signed):\n%s", diff)
	}
	if !bytes.Contains(doc, []byte(`oe:key="seedinit.seed-manifest" oe:value="TQo="`)) || !bytes.Contains(doc, []byte(`oe:key="seedinit.seed-manifest.sig" oe:value="Uwo="`)) {
		t.Errorf("manifest properties:\n%s", doc)
	}
	for _, bad := range []Options{
		{Kind: OVF, MetaData: []byte("instance-id: a\navailability-zone: z\n")},
		{Kind: OVF, VendorData: []byte("#cloud-config\n")},
		{Kind: OVF, NetworkConfig: []byte("- a\n")},
	} {
		if _, err := Layout(bad); err == nil {
			t.Errorf("Layout(%+v) made an image", bad)
		}
	}
	if err := Build(filepath.Join(t.TempDir(), "x.img"), Options{Kind: OVF, Format: VFAT}); err == nil {
		t.Error("a FAT OVF disc was built")
	}
}
