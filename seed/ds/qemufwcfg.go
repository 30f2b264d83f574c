package ds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

func init() { Register(qemuFwCfg{}) }

// QEMU's fw_cfg device hands the guest named blobs (-fw_cfg
// name=opt/...,file=... or string=...), which Linux's qemu_fw_cfg
// driver shows under /sys/firmware/qemu_fw_cfg/by_name/<name>/raw. Two
// layouts are read, each a NoCloud seed by its file names:
//
//   - opt/io.cloud-init/cloud-init/{meta-data,user-data,vendor-data,
//     network-config}: the names of cloud-init's QemuFwCfg datasource as
//     proposed upstream (canonical/cloud-init#6913), under the reverse
//     domain name QEMU asks "opt/" names to carry;
//   - opt/io.systemd.credentials/cloud-init.{meta-data,...}: the same
//     seed as systemd credentials, where systemd reads credentials from
//     fw_cfg, named as in the SMBIOS OEM strings (CredentialPrefix).
//
// The first layout that has meta-data and user-data is the seed; an
// instance-id missing from meta-data is "iid-qemufwcfg", as upstream.
const (
	fwCfgByName          = "/sys/firmware/qemu_fw_cfg/by_name"
	fwCfgCloudInitDir    = "opt/io.cloud-init/cloud-init"
	fwCfgCredentialsDir  = "opt/io.systemd.credentials"
	fwCfgDefaultInstance = "iid-qemufwcfg"
)

// qemuFwCfg is the QemuFwCfg datasource.
type qemuFwCfg struct{}

func (qemuFwCfg) Name() string       { return "QemuFwCfg" }
func (qemuFwCfg) NeedsNetwork() bool { return false }

// fwCfgLayout is one place of the seed in fw_cfg: its directory and the
// prefix of its entries' names.
type fwCfgLayout struct{ dir, prefix string }

var fwCfgLayouts = []fwCfgLayout{
	{fwCfgCloudInitDir, ""},
	{fwCfgCredentialsDir, CredentialPrefix},
}

// fwCfgTree reads one layout's entries as a seed directory's files.
type fwCfgTree struct {
	byName string
	layout fwCfgLayout
}

func (t fwCfgTree) entry(name string) string {
	return path.Join(t.layout.dir, t.layout.prefix+name)
}

func (t fwCfgTree) ReadFile(name string) ([]byte, error) {
	if strings.ContainsAny(name, "/\x00") {
		return nil, fs.ErrNotExist
	}
	p := filepath.Join(t.byName, t.entry(name), "raw")
	b, err := readCapped(p, maxImageFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("fw_cfg %s: %w", t.entry(name), err)
	}
	return b, nil
}

func (t fwCfgTree) ReadDir(string) ([]string, error) {
	var out []string
	for _, n := range seed.PartNames {
		if t.has(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// has says whether the layout has an entry name.
func (t fwCfgTree) has(name string) bool {
	_, err := os.Stat(filepath.Join(t.byName, t.entry(name), "raw"))
	return err == nil
}

func (env *Env) fwCfgByName() string {
	if env != nil && env.FwCfgDir != "" {
		return env.FwCfgDir
	}
	return fwCfgByName
}

// seedLayout is the first layout holding meta-data and user-data.
func (q qemuFwCfg) seedLayout(env *Env) (fwCfgTree, bool) {
	for _, l := range fwCfgLayouts {
		t := fwCfgTree{byName: env.fwCfgByName(), layout: l}
		if t.has("meta-data") && t.has("user-data") {
			return t, true
		}
	}
	return fwCfgTree{}, false
}

func (q qemuFwCfg) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if _, err := os.Stat(env.fwCfgByName()); err != nil {
		return Evidence{Verdict: NotFound, Reason: "no QEMU fw_cfg device (" + env.fwCfgByName() + " is missing)"}, nil
	}
	if t, ok := q.seedLayout(env); ok {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("fw_cfg entries %s and %s", t.entry("meta-data"), t.entry("user-data"))}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "fw_cfg has no " + fwCfgCloudInitDir + "/ or " + fwCfgCredentialsDir + "/" + CredentialPrefix + "* seed (meta-data and user-data)"}, nil
}

func (q qemuFwCfg) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	t, ok := q.seedLayout(env)
	if !ok {
		return nil, errors.New("read QemuFwCfg: no seed in fw_cfg (meta-data and user-data)")
	}
	d := &noCloudData{meta: map[string]any{}, defaultID: fwCfgDefaultInstance}
	where := "fw_cfg " + t.layout.dir
	found, err := d.readTree(t, where)
	if err != nil {
		return nil, fmt.Errorf("read QemuFwCfg: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("read QemuFwCfg: %s has no meta-data", where)
	}
	if scalar(d.meta["instance-id"]) == "" {
		d.meta["instance-id"] = fwCfgDefaultInstance
	}
	sd, err := noCloudSeed(d)
	if err != nil {
		return nil, fmt.Errorf("read QemuFwCfg: %w", err)
	}
	sd.Datasource = q.Name()
	sd.Subplatform = fmt.Sprintf("fw_cfg (%s)", filepath.Join(env.fwCfgByName(), t.layout.dir))
	return sd, nil
}
