package ds

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
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/ds/dstest"

	"github.com/seedinit/seedinit/internal/testenv"
)

// dsIdentifyScript is cloud-init's ds-identify as Debian installs it
// (cloud-init 22.4.2, the version seedinit matches).
const dsIdentifyScript = "/usr/lib/cloud-init/ds-identify"

// identifyCase is one machine, described once and shown to both
// ds-identify and seedinit.
type identifyCase struct {
	name string
	// dmi holds /sys/class/dmi/id files; files holds any other file of
	// the root (slash paths), cloud.cfg among them.
	dmi     map[string]string
	files   map[string]string
	cmdline string
	// labels are the filesystems blkid would report, device -> label;
	// all are ISO9660, as Nova's and cloud-localds's seeds are.
	labels map[string]string
	// dsIdentify is the datasource_list ds-identify writes (without the
	// None it always appends); seedinit the sources seedinit's search
	// keeps after its probes, in the order it would try them.
	dsIdentify []string
	seedinit   []string
	// why explains a deliberate difference; it must be set exactly when
	// the two lists differ.
	why string
}

// Reasons for the differences that recur below.
const (
	whyEC2Maybe = "seedinit keeps Ec2 as a last-resort \"maybe\" when no network source has a platform marker " +
		"(cloud-init's DataSourceEc2 defaults strict_id to warn); ds-identify 22.4.2 on x86 defaults strict_id " +
		"to true and its policy to maybe=none, so it drops Ec2. Nothing is fetched from Ec2 unless nothing else answers."
	whyListOrder = "with no datasource_list, ds-identify orders its findings by its own DI_DSLIST_DEFAULT " +
		"(ConfigDrive before NoCloud); seedinit follows cloud-init's settings.py CFG_BUILTIN order (NoCloud first). " +
		"Both find the same sources."
)

func identifyCases() []identifyCase {
	const awsUUID = "ec2e1916-9099-7caf-fd21-012345abcdef"
	return []identifyCase{
		{
			name:       "OpenStack Nova product name",
			dmi:        map[string]string{"product_name": "OpenStack Nova", "sys_vendor": "OpenStack Foundation"},
			dsIdentify: []string{"OpenStack"}, seedinit: []string{"OpenStack"},
		},
		{
			name:       "OpenStack Compute asset tag",
			dmi:        map[string]string{"chassis_asset_tag": "OpenStack Compute", "product_name": "KVM"},
			dsIdentify: []string{"OpenStack"}, seedinit: []string{"OpenStack"},
		},
		{
			name: "EC2 Nitro: product_uuid and product_serial ec2...",
			dmi: map[string]string{"sys_vendor": "Amazon EC2", "product_name": "m5.large",
				"product_uuid": awsUUID, "product_serial": awsUUID},
			dsIdentify: []string{"Ec2"}, seedinit: []string{"Ec2"},
		},
		{
			// Neither checks sys_vendor "Amazon EC2" alone (22.4.2 knows AWS
			// only by its uuid and serial).
			name:       "EC2 sys_vendor only, uuid not ec2",
			dmi:        map[string]string{"sys_vendor": "Amazon EC2", "product_uuid": "4a1f0c2e-0000-1111-2222-333344445555"},
			dsIdentify: nil, seedinit: []string{"Ec2"}, why: whyEC2Maybe,
		},
		{
			// Xen-era EC2: both read /sys/hypervisor/uuid.
			name:       "EC2 on Xen: /sys/hypervisor/uuid ec2...",
			dmi:        map[string]string{"sys_vendor": "Xen", "product_name": "HVM domU"},
			files:      map[string]string{"sys/hypervisor/uuid": awsUUID + "\n"},
			dsIdentify: []string{"Ec2"}, seedinit: []string{"Ec2"},
		},
		{
			name:       "GCE product name",
			dmi:        map[string]string{"product_name": "Google Compute Engine", "sys_vendor": "Google"},
			dsIdentify: []string{"GCE"}, seedinit: []string{"GCE"},
		},
		{
			name:       "GCE product name Google",
			dmi:        map[string]string{"product_name": "Google", "sys_vendor": "Google"},
			dsIdentify: nil, seedinit: []string{"GCE"},
			why: "seedinit's probe follows DataSourceGCE.platform_reports_gce, which also accepts product_name " +
				"\"Google\"; ds-identify 22.4.2 matches only \"Google Compute Engine\" or the serial, so real cloud-init " +
				"never gets to run its own check there.",
		},
		{
			name:       "GCE product serial only",
			dmi:        map[string]string{"product_serial": "GoogleCloud-6B0E52A2A7B2C6F3"},
			dsIdentify: []string{"GCE"}, seedinit: []string{"GCE"},
		},
		{
			name:       "Azure chassis asset tag",
			dmi:        map[string]string{"chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77", "sys_vendor": "Microsoft Corporation"},
			dsIdentify: []string{"Azure"}, seedinit: []string{"Azure"},
		},
		{
			name:       "DigitalOcean sys_vendor",
			dmi:        map[string]string{"sys_vendor": "DigitalOcean", "product_name": "Droplet"},
			dsIdentify: []string{"DigitalOcean"}, seedinit: []string{"DigitalOcean"},
		},
		{
			name:       "Hetzner sys_vendor",
			dmi:        map[string]string{"sys_vendor": "Hetzner", "product_name": "vServer"},
			dsIdentify: []string{"Hetzner"}, seedinit: []string{"Hetzner"},
		},
		{
			name:       "Oracle chassis asset tag",
			dmi:        map[string]string{"chassis_asset_tag": "OracleCloud.com", "sys_vendor": "QEMU"},
			dsIdentify: []string{"Oracle"}, seedinit: []string{"Oracle"},
		},
		{
			name:       "Vultr sys_vendor",
			dmi:        map[string]string{"sys_vendor": "Vultr", "product_name": "VC2"},
			dsIdentify: []string{"Vultr"}, seedinit: []string{"Vultr"},
		},
		{
			name:       "Vultr bare metal: vultr on the command line",
			cmdline:    "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro vultr",
			dsIdentify: []string{"Vultr"}, seedinit: []string{"Vultr"},
		},
		{
			name:       "Scaleway sys_vendor",
			dmi:        map[string]string{"sys_vendor": "Scaleway", "product_name": "SCW-DEV1-S"},
			dsIdentify: []string{"Scaleway"}, seedinit: []string{"Scaleway"},
		},
		{
			name:       "Scaleway marker file",
			files:      map[string]string{"var/run/scaleway": ""},
			dsIdentify: []string{"Scaleway"}, seedinit: []string{"Scaleway"},
		},
		{
			name:       "AliYun product name",
			dmi:        map[string]string{"product_name": "Alibaba Cloud ECS", "sys_vendor": "Alibaba Cloud"},
			dsIdentify: []string{"AliYun"}, seedinit: []string{"AliYun"},
		},
		{
			name:       "Exoscale product name",
			dmi:        map[string]string{"product_name": "Exoscale Compute", "sys_vendor": "Exoscale"},
			dsIdentify: []string{"Exoscale"}, seedinit: []string{"Exoscale"},
		},
		{
			name:       "CloudStack product name",
			dmi:        map[string]string{"product_name": "CloudStack KVM Hypervisor", "sys_vendor": "Apache Software Foundation"},
			dsIdentify: []string{"CloudStack"}, seedinit: []string{"CloudStack"},
		},
		{
			name:       "cidata label",
			labels:     map[string]string{"/dev/sr0": "cidata"},
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud", "Ec2"}, why: whyEC2Maybe,
		},
		{
			name:       "CIDATA label in capitals",
			labels:     map[string]string{"/dev/vdb": "CIDATA"},
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud", "Ec2"}, why: whyEC2Maybe,
		},
		{
			// A config drive rules the metadata service out in both, even
			// with Nova's DMI.
			name:       "config-2 label on Nova",
			dmi:        map[string]string{"product_name": "OpenStack Nova"},
			labels:     map[string]string{"/dev/sr0": "config-2"},
			dsIdentify: []string{"ConfigDrive"}, seedinit: []string{"ConfigDrive", "Ec2"}, why: whyEC2Maybe,
		},
		{
			name:       "config-2 label, no DMI",
			labels:     map[string]string{"/dev/sr0": "config-2"},
			dsIdentify: []string{"ConfigDrive"}, seedinit: []string{"ConfigDrive", "Ec2"}, why: whyEC2Maybe,
		},
		{
			name:       "cidata and config-2 both present",
			dmi:        map[string]string{"sys_vendor": "Hetzner"},
			labels:     map[string]string{"/dev/sr0": "cidata", "/dev/sr1": "config-2"},
			dsIdentify: []string{"ConfigDrive", "NoCloud", "Hetzner"}, seedinit: []string{"NoCloud", "ConfigDrive", "Hetzner"},
			why: whyListOrder,
		},
		{
			name:       "ci.ds= on the command line overrides DMI",
			dmi:        map[string]string{"sys_vendor": "Hetzner"},
			cmdline:    "root=/dev/vda1 ci.ds=OpenStack",
			dsIdentify: []string{"OpenStack"}, seedinit: []string{"OpenStack"},
		},
		{
			name:       "ci.datasource= on the command line",
			cmdline:    "quiet ci.datasource=GCE",
			dsIdentify: []string{"GCE"}, seedinit: []string{"GCE"},
		},
		{
			name:       "ds=nocloud with a seed URL on the command line",
			cmdline:    "ro ds=nocloud;s=http://10.0.0.1:8000/seed/",
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud"},
		},
		{
			name:       "ds=nocloud in the SMBIOS serial",
			dmi:        map[string]string{"product_serial": "ds=nocloud;i=iid-serial"},
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud", "Ec2"}, why: whyEC2Maybe,
		},
		{
			name:       "NoCloud seed directory",
			files:      map[string]string{"var/lib/cloud/seed/nocloud/meta-data": "instance-id: iid-dir\n", "var/lib/cloud/seed/nocloud/user-data": ""},
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud", "Ec2"}, why: whyEC2Maybe,
		},
		{
			// One entry is taken as the user's choice, probe or not.
			name:       "datasource_list with one entry",
			dmi:        map[string]string{"sys_vendor": "DigitalOcean"},
			files:      map[string]string{"etc/cloud/cloud.cfg.d/90_dpkg.cfg": "datasource_list: [ Hetzner ]\n"},
			dsIdentify: []string{"Hetzner"}, seedinit: []string{"Hetzner"},
		},
		{
			name:       "datasource_list with one entry and None",
			files:      map[string]string{"etc/cloud/cloud.cfg": "datasource_list: [ NoCloud, None ]\n"},
			dsIdentify: []string{"NoCloud"}, seedinit: []string{"NoCloud"},
		},
		{
			name:       "datasource_list narrows the search",
			dmi:        map[string]string{"sys_vendor": "Hetzner"},
			labels:     map[string]string{"/dev/sr0": "cidata"},
			files:      map[string]string{"etc/cloud/cloud.cfg.d/90_dpkg.cfg": "datasource_list: [ ConfigDrive, Hetzner, Ec2 ]\n"},
			dsIdentify: []string{"Hetzner"}, seedinit: []string{"Hetzner"},
		},
		{
			name:       "EC2 strict_id false in the config",
			files:      map[string]string{"etc/cloud/cloud.cfg.d/99_ec2.cfg": "datasource:\n  Ec2:\n    strict_id: false\n"},
			dsIdentify: nil, seedinit: []string{"Ec2"},
			why: "ds-identify turns strict_id: false into a maybe, and its x86 policy (maybe=none) still drops it; " +
				"seedinit tries the maybe since nothing else was found. " + whyEC2Maybe,
		},
		{
			name:       "nothing at all",
			dsIdentify: nil, seedinit: []string{"Ec2"}, why: whyEC2Maybe,
		},
	}
}

// TestDSIdentifyComparison shows the same machines to seedinit's probes
// and to cloud-init's ds-identify and compares the sources each keeps.
func TestDSIdentifyComparison(t *testing.T) {
	oracle := dsIdentifyRunner(t)
	for _, tc := range identifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			if differ := !cmp.Equal(tc.dsIdentify, tc.seedinit); differ != (tc.why != "") {
				t.Fatalf("case table: the lists differ=%v but why=%q: explain every difference, and only those", differ, tc.why)
			}
			root := buildIdentifyRoot(t, tc)

			got := seedinitCandidates(t, root, tc)
			if diff := cmp.Diff(tc.seedinit, got); diff != "" {
				t.Errorf("seedinit candidates (-want +got):\n%s", diff)
			}

			if oracle == nil {
				testenv.Skip(t, "ds-identify half skipped: "+dsIdentifySkipReason)
			}
			got, err := oracle(t, root, tc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.dsIdentify, got); diff != "" {
				t.Errorf("ds-identify datasource_list (-want +got):\n%s", diff)
			}
			if tc.why != "" {
				t.Logf("deliberate difference: ds-identify %v, seedinit %v: %s", tc.dsIdentify, tc.seedinit, tc.why)
			}
		})
	}
}

// buildIdentifyRoot writes the case's DMI, command line and files under a
// new directory laid out like /, as ds-identify's PATH_ROOT expects.
func buildIdentifyRoot(t *testing.T, tc identifyCase) string {
	t.Helper()
	files := map[string]string{"proc/cmdline": tc.cmdline + "\n"}
	// ds-identify falls back to dmidecode when the DMI directory is
	// missing: keep it, even empty, so the host's SMBIOS never leaks in.
	files["sys/class/dmi/id/.keep"] = ""
	for k, v := range tc.dmi {
		files["sys/class/dmi/id/"+k] = v + "\n"
	}
	for k, v := range tc.files {
		files[k] = v
	}
	return dstest.WriteTree(t, files)
}

// labelDevices are block devices known only by their labels; opening one
// fails, so a local source is tried and fails without any image.
type labelDevices map[string]string

func (d labelDevices) List(ctx context.Context) ([]BlockDevice, error) {
	var out []BlockDevice
	for _, dev := range sortedLabelDevices(d) {
		out = append(out, BlockDevice{Path: dev, FSType: "iso9660", Label: d[dev]})
	}
	return out, nil
}

func (d labelDevices) Open(p string) (io.ReaderAt, int64, io.Closer, error) {
	return nil, 0, nil, fmt.Errorf("open %s: the comparison test has labels, not images", p)
}

func sortedLabelDevices(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// errDialRefused is what every connection attempt of the comparison gets.
var errDialRefused = errors.New("the ds-identify comparison refuses every dial")

// refusingFetcher never opens a connection, loopback included: the
// comparison is about probes, and network sources must fail at once.
func refusingFetcher(t *testing.T) *Fetcher {
	f := NewFetcher(FetchOptions{Retries: -1, Timeout: 200 * time.Millisecond}, testLogger(t))
	tr := f.Client.Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, fmt.Errorf("dial %s %s: %w", network, addr, errDialRefused)
	}
	f.Client.Transport = tr
	return f
}

// seedinitCandidates runs seedinit's search over root and returns the
// sources it did not rule out, in the order it tried them.
func seedinitCandidates(t *testing.T, rootDir string, tc identifyCase) []string {
	t.Helper()
	root, err := rootfs.Open(rootDir)
	if err != nil {
		t.Fatalf("open target root %s: %v", rootDir, err)
	}
	t.Cleanup(func() { root.Close() })
	cfg, err := LoadConfig(root)
	if err != nil {
		t.Fatalf("load datasource config of case %q: %v", tc.name, err)
	}
	cmdline, err := os.ReadFile(filepath.Join(rootDir, "proc", "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	hvUUID, _ := os.ReadFile(filepath.Join(rootDir, "sys", "hypervisor", "uuid"))
	env := &Env{
		HypervisorUUID: strings.TrimSpace(string(hvUUID)),
		Root:           root,
		DMI:            &SysDMI{Dir: filepath.Join(rootDir, "sys", "class", "dmi", "id"), EntriesDir: filepath.Join(rootDir, "sys", "firmware", "dmi", "entries")},
		Cmdline:        strings.TrimSpace(string(cmdline)),
		FwCfgDir:       filepath.Join(rootDir, "sys", "firmware", "qemu_fw_cfg", "by_name"),
		Devices:        labelDevices(tc.labels),
		Config:         cfg,
		Fetcher:        refusingFetcher(t),
		Log:            testLogger(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Seed directories and the SMBIOS serial can be read here; disks and
	// metadata services cannot, so the search may end either way.
	res, err := DetectStage(ctx, env, 2*time.Second, StageAll)
	if err != nil && !errors.Is(err, ErrNoDatasource) {
		t.Fatalf("search: %v", err)
	}
	var kept []string
	for _, a := range res.Attempts {
		if a.Outcome != OutcomeSkipped {
			kept = append(kept, a.Datasource)
		}
	}
	return kept
}

var dsIdentifySkipReason string

// dsIdentifyRunner returns a function that runs ds-identify in its test
// mode on a root, or nil (with dsIdentifySkipReason set) when it cannot.
func dsIdentifyRunner(t *testing.T) func(*testing.T, string, identifyCase) ([]string, error) {
	t.Helper()
	if _, err := os.Stat(dsIdentifyScript); err != nil {
		dsIdentifySkipReason = fmt.Sprintf("cloud-init's ds-identify is not installed (%v)", err)
		return nil
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		dsIdentifySkipReason = "no sh to run ds-identify with"
		return nil
	}
	// ds-identify reads only files and mocked commands, but it is run
	// without a network anyway when the kernel lets us.
	var prefix []string
	if unshare, err := exec.LookPath("unshare"); err == nil && exec.Command(unshare, "-n", "true").Run() == nil {
		prefix = []string{unshare, "-n"}
	}
	return func(t *testing.T, root string, tc identifyCase) ([]string, error) {
		wrapper := filepath.Join(t.TempDir(), "ds-identify-test.sh")
		if err := os.WriteFile(wrapper, []byte(dsIdentifyWrapper(tc)), 0o644); err != nil {
			return nil, err
		}
		argv := append(append([]string{}, prefix...), sh, wrapper)
		cmd := exec.Command(argv[0], argv[1:]...)
		// A clean environment: no VMX_GUESTINFO or PATH_* from the caller.
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "PATH_ROOT=" + root, "LC_ALL=C"}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return nil, fmt.Errorf("run ds-identify for case %q: %w\n%s", tc.name, err, out)
		}
		cfgPath := filepath.Join(root, "run", "cloud-init", "cloud.cfg")
		result, err := os.ReadFile(cfgPath)
		if err != nil {
			return nil, fmt.Errorf("read ds-identify's result %s: %w\n%s", cfgPath, err, out)
		}
		list, err := parseDSIdentifyList(string(result))
		if err != nil {
			return nil, fmt.Errorf("parse ds-identify's result %s: %w\n%s", cfgPath, err, out)
		}
		return list, nil
	}
}

// dsIdentifyWrapper sources ds-identify without running it, replaces the
// commands that would look at the host (blkid, uname, systemd-detect-virt,
// the LXD socket), and runs its main: the way cloud-init's own
// test_ds_identify.py drives it.
func dsIdentifyWrapper(tc identifyCase) string {
	var blkid strings.Builder
	for _, dev := range sortedLabelDevices(tc.labels) {
		fmt.Fprintf(&blkid, "DEVNAME=%s\nTYPE=iso9660\nLABEL=%s\n\n", dev, tc.labels[dev])
	}
	machine := map[string]string{"amd64": "x86_64", "386": "i686", "arm64": "aarch64"}[runtime.GOARCH]
	if machine == "" {
		machine = runtime.GOARCH
	}
	return fmt.Sprintf(`DI_MAIN=noop
DI_LOG=stderr
DEBUG_LEVEL=2
. %s
blkid() {
	printf '%%s' %s
}
uname() {
	echo "Linux seedinit-test 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 %s GNU/Linux"
}
detect_virt() {
	_RET="kvm"
}
is_socket_file() {
	return 1
}
main --force
`, dsIdentifyScript, shellQuote(blkid.String()), machine)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var dsListLine = regexp.MustCompile(`(?m)^\s*datasource_list:\s*\[(.*)\]\s*$`)

// parseDSIdentifyList reads "datasource_list: [ A, B, None ]" from
// ds-identify's cloud.cfg, leaving out the None it always appends.
func parseDSIdentifyList(cfg string) ([]string, error) {
	m := dsListLine.FindStringSubmatch(cfg)
	if m == nil {
		return nil, fmt.Errorf("no datasource_list line in %q", cfg)
	}
	var out []string
	for _, n := range strings.Split(m[1], ",") {
		n = strings.TrimSpace(n)
		if n != "" && n != "None" {
			out = append(out, n)
		}
	}
	return out, nil
}

func TestParseDSIdentifyList(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{name: "found", in: "datasource_list: [ Hetzner, None ]\n", want: []string{"Hetzner"}},
		{name: "several", in: "datasource_list: [ ConfigDrive, NoCloud, None ]\ndatasource: {Ec2: {strict_id: \"warn\"}}\n", want: []string{"ConfigDrive", "NoCloud"}},
		{name: "not found report", in: "di_report:\n  datasource_list: [  ]\n  # reporting not found result. notfound=disabled.\n"},
		{name: "no list", in: "# manual_cache_clean.\n", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDSIdentifyList(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
