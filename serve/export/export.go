// Package export writes an inventory's instances to seed images, one a
// machine, for appliances that read their seed from a disk and never ask
// a server: `seedinit serve export`. A NoCloud disk (label cidata, ISO9660
// or FAT) carries the instance's parts as served over HTTP; a config drive
// (label config-2) carries them in OpenStack's form. With a signing key
// each image carries a seed manifest bound to that instance, so that an
// image attached to the wrong machine is refused there.
package export

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedinit/seedinit/images/seedimg"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
)

// Format is what an export writes for each instance.
type Format string

// The formats.
const (
	ISO         Format = "iso"         // NoCloud, ISO9660 (cloud-localds)
	VFAT        Format = "vfat"        // NoCloud, FAT
	ConfigDrive Format = "configdrive" // OpenStack config drive, ISO9660 (Nova's default)
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case ISO, VFAT, ConfigDrive:
		return f, nil
	case "config-drive", "config-2":
		return ConfigDrive, nil
	}
	return "", fmt.Errorf("--format %q: want iso, vfat or configdrive", s)
}

// FileName is the image an instance gets: its name, and a suffix per
// format so that exports of several formats can share a folder.
func (f Format) FileName(instance string) string {
	switch f {
	case VFAT:
		return instance + ".img"
	case ConfigDrive:
		return instance + ".config-2.iso"
	}
	return instance + ".iso"
}

// Options are an export's settings.
type Options struct {
	Format Format
	// Key signs each image when set; its manifest binds the image to the
	// instance's system UUIDs, MACs and instance-id.
	Key ed25519.PrivateKey
	// ValidFor, when set with Key, makes each manifest expire that long
	// after signing.
	ValidFor time.Duration
	// Now is the signing time; zero is time.Now().
	Now time.Time
}

// Result is one instance's export.
type Result struct {
	Instance string
	// Path is the image written, "" when Err is set.
	Path string
	Err  error
}

// Export writes one image per instance of inv into dir, each replaced
// atomically (seedimg.Build), so that a run that is interrupted or run
// again leaves every image whole, old or new. An instance that fails is
// reported in its Result and the others are still written; the error
// joins every failure.
func Export(ctx context.Context, inv *inventory.Inventory, dir string, o Options) ([]Result, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export to %s: %w", dir, err)
	}
	var results []Result
	var errs []error
	for _, inst := range inv.Instances {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("export: %w", err))
			break
		}
		r := Result{Instance: inst.Name}
		p, err := exportOne(inst, dir, o)
		if err != nil {
			r.Err = fmt.Errorf("export instance %s (%s): %w", inst.Name, inst.File, err)
			errs = append(errs, r.Err)
		} else {
			r.Path = p
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

func exportOne(inst *inventory.Instance, dir string, o Options) (string, error) {
	// The name becomes a file name: it must stay one file in dir.
	if inst.Name == "" || strings.ContainsAny(inst.Name, `/\`) || strings.HasPrefix(inst.Name, ".") {
		return "", fmt.Errorf("the name %q cannot name an image file", inst.Name)
	}
	opts, err := Image(inst, o)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, o.Format.FileName(inst.Name))
	if err := seedimg.Build(out, opts); err != nil {
		return "", err
	}
	return out, nil
}

// Image is the seed image an instance gets in format o.Format, as
// seedimg builds it.
func Image(inst *inventory.Instance, o Options) (seedimg.Options, error) {
	img := seedimg.Options{
		Format:     seedimg.ISO,
		Kind:       seedimg.NoCloud,
		MetaData:   inventory.MarshalYAML(inst.MetaData),
		UserData:   inst.UserData,
		VendorData: inst.VendorData,
	}
	switch o.Format {
	case ISO:
		img.NetworkConfig = inst.NetworkConfig
	case VFAT:
		img.Format = seedimg.VFAT
		img.NetworkConfig = inst.NetworkConfig
	case ConfigDrive:
		img.Kind = seedimg.ConfigDrive
		// meta_data.json is derived from the same meta-data by seedimg:
		// uuid from instance-id, hostname, public_keys.
		if inst.NetworkConfig != nil {
			nd, err := networkDataJSON(inst.NetworkConfig)
			if err != nil {
				return img, err
			}
			img.NetworkConfig = nd
		}
	default:
		return img, fmt.Errorf("unknown format %q", o.Format)
	}
	if o.Key != nil && img.Kind == seedimg.ConfigDrive && inst.VendorData != nil {
		// seedinit's config drive reader keeps no vendor_data.json for
		// the trust decision: under require the appliance would drop
		// the vendor-data it was given, at boot, where nobody sees it.
		return img, errors.New("vendor-data on a signed config drive: no manifest covers vendor_data.json; export --format iso or vfat, or move it into user-data")
	}
	if o.Key != nil {
		m := Manifest(inst, o.Now)
		if o.ValidFor > 0 {
			m.NotAfter = m.SignedAt.Add(o.ValidFor)
		}
		img.Sign = func(in seedimg.SignInput) ([]byte, []byte, error) {
			return sign(o.Key, m, in)
		}
	}
	return img, nil
}

// Manifest is the manifest an instance's seed is signed with, its parts
// still to fill: bound to every identity the inventory knows the
// instance by, so that a seed copied to another machine is refused there.
// The instance-id binding always holds (it is in the seed itself); the
// system UUID and MAC bindings where the inventory gives them.
func Manifest(inst *inventory.Instance, now time.Time) *trust.Manifest {
	return &trust.Manifest{
		SignedAt:    now.UTC().Truncate(time.Second),
		SystemUUIDs: append([]string(nil), inst.SystemUUIDs...),
		MACs:        append([]string(nil), inst.MACs...),
		InstanceIDs: []string{inst.InstanceID},
	}
}

func sign(key ed25519.PrivateKey, m *trust.Manifest, in seedimg.SignInput) ([]byte, []byte, error) {
	mm := *m
	mm.Parts = map[string][32]byte{}
	for role, content := range in.Parts {
		mm.Parts[role] = trust.Digest(content)
	}
	if len(mm.Parts) == 0 {
		return nil, nil, errors.New("no part to sign")
	}
	body := mm.Marshal()
	sig, err := trust.Sign(key, body)
	if err != nil {
		return nil, nil, err
	}
	return body, sig, nil
}

// networkDataJSON is an instance's network config (cloud-init v1 or v2)
// as the network_data.json of its config drive.
func networkDataJSON(config []byte) ([]byte, error) {
	n, err := parse.YAML(config, parse.Options{})
	if err != nil {
		return nil, err
	}
	return render.NetworkDataJSON(n)
}
