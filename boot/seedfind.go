package boot

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/apply/target"
	"github.com/seedinit/seedinit/seed"
)

// seedDirs are NoCloud's seed directories inside the target.
var seedDirs = []string{"/var/lib/cloud/seed/nocloud", "/var/lib/cloud/seed/nocloud-net"}

// FindSeed finds the instance's seed from the local sources: a NoCloud seed
// directory in the target, then a disk labelled cidata. (The datasource
// search with network sources replaces this.)
func FindSeed(log *slog.Logger, root *target.Root, opts Options) (*seed.Seed, error) {
	for _, d := range seedDirs {
		host, err := root.HostPath(d)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(host, "meta-data")); err == nil {
			s, err := seed.LoadNoCloudDir(host)
			if err != nil {
				log.Warn("seed directory unusable", "dir", d, "error", err.Error())
				continue
			}
			s.Subplatform = fmt.Sprintf("seed-dir (%s)", d)
			return s, nil
		}
	}
	for _, dev := range blockDevices() {
		typ, label, err := readDeviceLabel(dev)
		if err != nil || !strings.EqualFold(label, "cidata") {
			continue
		}
		s, err := loadSeedDisk(dev, typ)
		if err != nil {
			log.Warn("cidata disk unusable", "device", dev, "error", err.Error())
			continue
		}
		return s, nil
	}
	log.Info("no seed found: nothing to provision")
	return nil, errors.New("no seed found")
}

func blockDevices() []string {
	entries, _ := os.ReadDir("/sys/class/block")
	var out []string
	for _, e := range entries {
		out = append(out, "/dev/"+e.Name())
	}
	return out
}

func readDeviceLabel(dev string) (string, string, error) {
	f, err := os.Open(dev)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	return seed.ReadLabel(f)
}

func loadSeedDisk(dev, fsType string) (*seed.Seed, error) {
	mnt := filepath.Join(RunDir, "seed-mnt")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return nil, err
	}
	if err := unix.Mount(dev, mnt, fsType, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount %s (%s): %w", dev, fsType, err)
	}
	defer unix.Unmount(mnt, 0)
	s, err := seed.LoadNoCloudDir(mnt)
	if err != nil {
		return nil, err
	}
	s.Subplatform = fmt.Sprintf("config-disk (%s)", dev)
	return s, nil
}

// saveSeed keeps the seed in NoCloud layout under /run/seedinit/seed for
// the final stage, which runs after the handoff in another process.
func saveSeed(s *seed.Seed) error {
	if err := os.MkdirAll(SeedCacheDir, 0o700); err != nil {
		return err
	}
	md, err := json.Marshal(s.Metadata)
	if err != nil {
		return err
	}
	files := map[string][]byte{"meta-data": md, "user-data": s.UserData, "vendor-data": s.VendorData}
	if len(s.NetworkConfig) > 0 {
		files["network-config"] = s.NetworkConfig
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(SeedCacheDir, name), data, 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(SeedCacheDir, "subplatform"), []byte(s.Subplatform), 0o600)
}

// FindRoot resolves root= specs: /dev paths as they are, and LABEL=,
// UUID=, PARTUUID=, PARTLABEL= by reading the filesystems' superblocks and
// the partition tables, since an initramfs has no udev to make
// /dev/disk/by-* links.
func FindRoot(spec string) (string, error) {
	if strings.HasPrefix(spec, "/dev/") && !strings.HasPrefix(spec, "/dev/disk/") {
		return FindDevPath(spec)
	}
	b, err := disk.DefaultHost.Resolve(spec)
	if err != nil {
		if errors.Is(err, disk.ErrNotFound) {
			return "", ErrNoDevice
		}
		return "", err
	}
	p := "/dev/" + b.Name
	if _, err := os.Stat(p); err != nil {
		// devtmpfs makes the node; until it has, the device is not there.
		return "", ErrNoDevice
	}
	return p, nil
}
