package netup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/netup/internal/rendercheck"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
)

// hostileCase is one input of testdata/hostile: a config that cloud-init
// 22.4.2 converts into files with a line of the input's own making (or
// at a path above net-convert's output directory), and that seedinit
// deliberately refuses whole.
type hostileCase struct {
	file string
	kind string
	// flawIn lists the output kinds in which cloud-init's files show the
	// flaw: a line no renderer writes, a control character, a path that
	// leaves the output directory.
	flawIn []string
	// differs is the deliberate difference, as the convert cases say it.
	differs string
	// precreate are directories made in the output directory first: the
	// ones cloud-init's os.makedirs trips over on a fresh directory and
	// that a host which ran it before already has.
	precreate []string
}

var hostileCases = []hostileCase{
	{file: "v1-mac-gateway-search.yaml", kind: KindYAML, flawIn: diffOutputs,
		differs: "cloud-init writes the MAC's, gateway's and search domain's second lines into the udev rules, the ENI stanza (an \"up\" command), ifcfg (a DNS1= assignment), resolv.conf and the networkd unit; seedinit refuses the config: not a MAC address"},
	{file: "v1-bond-up-param.yaml", kind: KindYAML, flawIn: []string{OutputENI, OutputSysconfig},
		differs: "cloud-init writes the bond's \"up\" parameter as an ENI up command and its mode into BONDING_OPTS=\"mode=$(...)\", which the network scripts' shell runs; seedinit refuses the config: not a link parameter"},
	{file: "v2-match-mac-newline.yaml", kind: KindYAML, flawIn: diffOutputs,
		differs: "cloud-init writes the matched MAC's second line into the udev rules, ifcfg and the networkd unit, and passes it to netplan; seedinit refuses the config: not a MAC address"},
	{file: "v2-name-escape.yaml", kind: KindYAML, flawIn: []string{OutputNetworkd, OutputSysconfig},
		precreate: []string{"etc/systemd/network/10-cloud-init-..", "etc/sysconfig/network-scripts/ifcfg-.."},
		differs:   "cloud-init writes 10-cloud-init-<name>.network and ifcfg-<name> above its output directory; seedinit refuses the config: not an interface name"},
	{file: "nd-mac-newline.json", kind: KindNetworkDataJSON, flawIn: diffOutputs,
		differs: "cloud-init writes the link's MAC and the DNS service's second lines into every output; seedinit refuses the config: not a MAC address"},
	{file: "eni-gateway-command.eni", kind: KindENI, flawIn: []string{OutputSysconfig},
		differs: "cloud-init writes GATEWAY=$(reboot) into ifcfg-eth0, which the network scripts source with the shell; seedinit refuses the config: not an IP address"},
}

// netConvertTree runs cloud-init's net-convert with its output directory
// two levels down a temporary directory, and returns what it wrote
// anywhere in that directory, keyed by path relative to the output
// directory ("../../X.network" for a file above it), or nil and false
// when cloud-init failed.
func netConvertTree(t *testing.T, bin, input, kind, out string, precreate []string) (map[string][]byte, bool) {
	t.Helper()
	top := t.TempDir()
	dir := filepath.Join(top, "a", "b", "c", "d", "out")
	for _, d := range precreate {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	distro := "debian"
	if out == OutputSysconfig {
		distro = "centos"
	}
	args := []string{"devel", "net-convert", "-p", input, "-k", kind, "-d", dir, "-D", distro, "-O", out}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Logf("cloud-init %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		return nil, false
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, true
}

// TestHostileConfigsRefused: cloud-init 22.4.2 converts each of
// testdata/hostile into files that carry the input's own lines, or puts
// them above the output directory, where seedinit deliberately refuses
// the config with an error naming the value. The oracle half checks that
// cloud-init still does what the case says (so that the note is dropped
// when cloud-init changes); the other half runs without it.
func TestHostileConfigsRefused(t *testing.T) {
	for _, c := range hostileCases {
		input := filepath.Join("testdata", "hostile", c.file)
		data, err := os.ReadFile(input)
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range diffOutputs {
			t.Run(c.file+"/"+out, func(t *testing.T) {
				files, err := Convert(data, c.kind, out, nil)
				if files != nil {
					t.Errorf("seedinit wrote files: %v", sortedPaths(files))
				}
				if !errors.Is(err, parse.ErrInvalidValue) {
					t.Fatalf("Convert error = %v, want parse.ErrInvalidValue", err)
				}
				if strings.ContainsFunc(err.Error(), func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f }) {
					t.Errorf("the error echoes a control character: %q", err)
				}
			})
		}
	}
	bin := cloudInit(t)
	for _, c := range hostileCases {
		input := filepath.Join("testdata", "hostile", c.file)
		for _, out := range c.flawIn {
			t.Run("cloud-init/"+c.file+"/"+out, func(t *testing.T) {
				theirs, ok := netConvertTree(t, bin, input, c.kind, out, c.precreate)
				if !ok {
					t.Fatalf("cloud-init refused the input: drop %s from the case's flawIn", out)
				}
				err := rendercheck.Files(render.Files(theirs))
				if err == nil {
					t.Fatalf("cloud-init's %s output shows no flaw: drop it from the case's flawIn", out)
				}
				t.Logf("seedinit deliberately differs: %s\ncloud-init's output: %v", c.differs, err)
			})
		}
	}
}
