package ds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() { Register(noCloud{}) }

// noCloudSeedDirs are NoCloud's seed directories in the target.
var noCloudSeedDirs = []string{"/var/lib/cloud/seed/nocloud", "/var/lib/cloud/seed/nocloud-net"}

// noCloud is cloud-init's NoCloud and NoCloudNet in one: what it finds
// on the command line and in the SMBIOS serial, a seed directory, a
// labelled disk, and a seedfrom URL (file or http).
type noCloud struct{}

func (noCloud) Name() string       { return "NoCloud" }
func (noCloud) NeedsNetwork() bool { return false }

func noCloudLabel(env *Env) (string, bool) {
	s := env.Settings("NoCloud")
	v, set := s["fs_label"]
	if !set {
		return "cidata", true
	}
	if v == nil {
		return "", false // fs_label: null turns disk search off
	}
	return fmt.Sprint(v), true
}

func (n noCloud) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if a, ok := parseNoCloudArgs(env.DMIField("product_serial")); ok {
		return Evidence{Verdict: Found, Reason: "ds=nocloud in the SMBIOS system serial", Network: isHTTP(a.Meta["seedfrom"])}, nil
	}
	oem := env.OEMStrings()
	if a, n, ok := oemNoCloudArgs(oem); ok {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("ds=nocloud in SMBIOS OEM string %d", n), Network: isHTTP(a.Meta["seedfrom"])}, nil
	}
	if a, ok := parseNoCloudArgs(env.Cmdline); ok {
		return Evidence{Verdict: Found, Reason: "ds=nocloud on the kernel command line", Network: a.Net || isHTTP(a.Meta["seedfrom"])}, nil
	}
	if env.Root != nil {
		for _, d := range noCloudSeedDirs {
			if env.Root.Exists(path.Join(d, "meta-data")) && env.Root.Exists(path.Join(d, "user-data")) {
				return Evidence{Verdict: Found, Reason: "seed directory " + d, Network: httpSeedFrom(rootTree{root: env.Root, dir: d})}, nil
			}
		}
	}
	creds, _ := oemCredentials(oem)
	if t := newCredentialTree(creds); t.has("meta-data") && t.has("user-data") {
		return Evidence{Verdict: Found, Reason: "credentials " + CredentialPrefix + "meta-data and " + CredentialPrefix + "user-data in SMBIOS OEM strings"}, nil
	}
	s := env.Settings("NoCloud")
	if sf, ok := s["seedfrom"].(string); ok && sf != "" {
		return Evidence{Verdict: Found, Reason: "datasource.NoCloud.seedfrom in the config", Network: isHTTP(sf)}, nil
	}
	if _, ok := s["user-data"]; ok {
		if _, ok := s["meta-data"]; ok {
			return Evidence{Verdict: Found, Reason: "datasource.NoCloud user-data and meta-data in the config"}, nil
		}
	}
	if label, ok := noCloudLabel(env); ok {
		devs, err := ByLabel(ctx, env.Devices, label)
		if len(devs) > 0 {
			ev := Evidence{Verdict: Found, Reason: fmt.Sprintf("label %s on %s", devs[0].Label, devs[0].Path)}
			if fsys, done, err := openDevice(env, devs[0].Path); err == nil {
				ev.Network = httpSeedFrom(fsys)
				done()
			}
			return ev, nil
		}
		if err != nil {
			return Evidence{Reason: "no NoCloud seed"}, fmt.Errorf("look for a %s disk: %w", label, err)
		}
	}
	return Evidence{Reason: "no ds=nocloud, seed directory or " + "cidata disk"}, nil
}

// httpSeedFrom says whether the seed in t points seedfrom at an http or
// https URL: such a seed is read once the network is up, as cloud-init's
// NoCloudNet reads it.
func httpSeedFrom(t fileTree) bool {
	md, err := t.ReadFile("meta-data")
	if err != nil {
		return false
	}
	m, err := parseNoCloudMeta(md, "meta-data")
	return err == nil && isHTTP(m["seedfrom"])
}

func isHTTP(v any) bool {
	s, _ := v.(string)
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// noCloudData is what the sources found so far, merged as cloud-init
// does: meta-data found earlier wins, user-data found later replaces.
type noCloudData struct {
	meta          map[string]any
	userData      []byte
	vendorData    []byte
	networkConfig []byte
	found         []string
	// defaultID is the instance-id of meta-data without one ("" when it
	// must have one).
	defaultID string
	// metaSources counts the sources that gave meta-data keys (seedfrom
	// aside): merged from more than one, the meta-data is no one
	// document. metaRaw is the document of the one that did, or, while
	// none has, the first document read.
	metaRaw     []byte
	metaSources int
	// docs and manifests are everything the sources served, for the
	// trust decision.
	docs      []seed.Document
	manifests []seed.SignedManifest
	// bootstrap is the seed disk's bootstrap tree.
	bootstrap []seed.BootstrapFile
}

// served notes what a source in NoCloud's layout served: its parts (nil:
// not there) and its manifest, read from t; where names a file.
func (d *noCloudData) served(t fileTree, parts map[string][]byte, where func(file string) string) error {
	d.docs = append(d.docs, seed.NoCloudDocuments(parts, where, d.defaultID)...)
	m, err := seed.ReadManifest(t.ReadFile, where)
	if err != nil {
		return err
	}
	if m != nil {
		d.manifests = append(d.manifests, *m)
	}
	return nil
}

// addMeta merges a source's meta-data keys; raw is its document (nil
// for keys from the command line or the SMBIOS serial).
func (d *noCloudData) addMeta(md map[string]any, raw []byte) {
	for k := range md {
		if k != "seedfrom" {
			d.metaSources++
			if d.metaSources == 1 {
				d.metaRaw = raw
			}
			break
		}
	}
	if d.metaSources == 0 && d.metaRaw == nil {
		d.metaRaw = raw
	}
	mergeKeep(d.meta, md)
}

// mergeKeep adds src's keys that dst lacks, recursing into mappings:
// cloud-init's mergemanydict, where the first source wins.
func mergeKeep(dst, src map[string]any) {
	for k, v := range src {
		cur, ok := dst[k]
		if !ok {
			dst[k] = v
			continue
		}
		cm, ok1 := cur.(map[string]any)
		sm, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			mergeKeep(cm, sm)
		}
	}
}

func (n noCloud) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	d := &noCloudData{meta: map[string]any{}, defaultID: "nocloud"}
	var errs []error
	if a, ok := parseNoCloudArgs(env.DMIField("product_serial")); ok {
		d.addMeta(a.Meta, nil)
		d.found = append(d.found, "dmi")
	}
	oem := env.OEMStrings()
	if a, _, ok := oemNoCloudArgs(oem); ok {
		d.addMeta(a.Meta, nil)
		d.found = append(d.found, "smbios-oem-strings")
	}
	if a, ok := parseNoCloudArgs(env.Cmdline); ok {
		d.addMeta(a.Meta, nil)
		d.found = append(d.found, "cmdline")
	}
	if env.Root != nil {
		for _, dir := range noCloudSeedDirs {
			ok, err := d.readTree(rootTree{root: env.Root, dir: dir}, dir)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				d.found = append(d.found, dir)
				break
			}
		}
	}
	// The hypervisor's credentials are this instance's own: they replace
	// the user-data of a seed directory baked into the image, and a seed
	// disk's replaces theirs, as each source found later does.
	creds, credErrs := oemCredentials(oem)
	errs = append(errs, credErrs...)
	if t := newCredentialTree(creds); len(t) > 0 {
		ok, err := d.readTree(t, "SMBIOS credentials")
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			d.found = append(d.found, "smbios-credentials")
		}
	}
	s := env.Settings("NoCloud")
	if sf, ok := s["seedfrom"].(string); ok && sf != "" {
		d.meta["seedfrom"] = sf
		d.found = append(d.found, "ds_config_seedfrom")
	}
	if ud, ok := s["user-data"]; ok {
		if md, ok := s["meta-data"]; ok {
			if m, ok := md.(map[string]any); ok {
				d.addMeta(m, nil)
			} else if str, ok := md.(string); ok {
				m, err := parseNoCloudMeta([]byte(str), "datasource.NoCloud.meta-data")
				if err != nil {
					errs = append(errs, err)
				}
				d.addMeta(m, nil)
			}
			d.userData = []byte(fmt.Sprint(ud))
			if vd, ok := s["vendor-data"]; ok {
				d.vendorData = []byte(fmt.Sprint(vd))
			}
			d.found = append(d.found, "ds_config")
		}
	}
	if label, ok := noCloudLabel(env); ok {
		devs, err := ByLabel(ctx, env.Devices, label)
		if err != nil {
			errs = append(errs, fmt.Errorf("look for a %s disk: %w", label, err))
		}
		for _, dev := range devs {
			fsys, done, err := openDevice(env, dev.Path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// A tree the disk holds and cannot be read breaks the disk,
			// as for a config drive: the image's agent would find
			// nothing, or half of it.
			bootstrap, err := readBootstrap(env, fsys, dev.Path)
			if err != nil {
				done()
				errs = append(errs, err)
				continue
			}
			ok, err := d.readTree(fsys, dev.Path)
			if ok {
				d.bootstrap = bootstrap
			}
			done()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				d.found = append(d.found, dev.Path)
				break
			}
		}
	}
	if len(d.found) == 0 {
		errs = append([]error{errors.New("no NoCloud seed found")}, errs...)
		return nil, fmt.Errorf("read NoCloud: %w", errors.Join(errs...))
	}
	if sf, ok := d.meta["seedfrom"].(string); ok && sf != "" {
		sf = subDMIVars(env, sf)
		if err := d.readSeedFrom(ctx, env, sf); err != nil {
			return nil, fmt.Errorf("read NoCloud seedfrom %s: %w", Redact(sf), err)
		}
		d.found = append(d.found, Redact(sf))
	}
	if _, ok := d.meta["instance-id"]; !ok {
		d.meta["instance-id"] = "nocloud"
	}
	if mode, _ := d.meta["dsmode"].(string); mode == "disabled" {
		return nil, errors.New("read NoCloud: dsmode is disabled")
	}
	sd, err := noCloudSeed(d)
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		env.Logger().Warn("NoCloud source skipped", "error", e.Error())
	}
	return sd, nil
}

// readTree reads a seed directory or disk. It needs meta-data and
// user-data, as cloud-init does; false means "not a seed here".
func (d *noCloudData) readTree(t fileTree, where string) (bool, error) {
	md, err := t.ReadFile("meta-data")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s/meta-data: %w", where, err)
	}
	ud, err := t.ReadFile("user-data")
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: meta-data without user-data is not a NoCloud seed", where)
	}
	if err != nil {
		return false, fmt.Errorf("read %s/user-data: %w", where, err)
	}
	meta, err := parseNoCloudMeta(md, where+"/meta-data")
	if err != nil {
		return false, err
	}
	var optional [2][]byte
	for i, name := range []string{"vendor-data", "network-config"} {
		b, err := t.ReadFile(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("read %s/%s: %w", where, name, err)
		}
		optional[i] = b
	}
	d.addMeta(meta, md)
	d.userData = ud
	if optional[0] != nil {
		d.vendorData = optional[0]
	}
	if len(optional[1]) > 0 {
		d.networkConfig = optional[1]
	}
	parts := map[string][]byte{"meta-data": md, "user-data": ud, "vendor-data": optional[0], "network-config": optional[1]}
	err = d.served(t, parts, func(file string) string { return where + "/" + file })
	return err == nil, err
}

// readSeedFrom reads meta-data and user-data (required) and vendor-data
// and network-config (optional) from a seedfrom base, which is prefixed
// to the names as is (a trailing slash is the user's to give) or holds a
// %s for them.
func (d *noCloudData) readSeedFrom(ctx context.Context, env *Env, base string) error {
	nameURL := func(name string) string {
		if strings.Contains(base, "%s") {
			return strings.Replace(base, "%s", name, 1)
		}
		return base + name
	}
	var read func(name string) ([]byte, error)
	switch {
	case isHTTP(base):
		f := env.HTTP().WithOptions(env.Config.FetchOptionsFor("NoCloud"))
		read = func(name string) ([]byte, error) {
			resp, err := f.Get(ctx, nameURL(name), nil)
			if err != nil {
				return nil, err
			}
			return resp.Body, nil
		}
	case strings.HasPrefix(base, "file://") || strings.HasPrefix(base, "/"):
		if env.Root == nil {
			return errors.New("a file seed needs a target root")
		}
		t := rootTree{root: env.Root, dir: "/"}
		read = func(name string) ([]byte, error) {
			return t.ReadFile(strings.TrimPrefix(nameURL(name), "file://"))
		}
	default:
		return errors.New("only http, https, file:// and absolute paths are supported")
	}
	md, err := read("meta-data")
	if err != nil {
		return err
	}
	ud, err := read("user-data")
	if err != nil {
		return err
	}
	meta, err := parseNoCloudMeta(md, Redact(nameURL("meta-data")))
	if err != nil {
		return err
	}
	d.addMeta(meta, md)
	d.userData = ud
	d.vendorData = nil
	if vd, err := read("vendor-data"); err == nil {
		d.vendorData = vd
	} else if !IsNotFound(err) && !errors.Is(err, fs.ErrNotExist) {
		env.Logger().Warn("NoCloud vendor-data unreadable", "error", err.Error())
	}
	// cloud-init 22.4 does not fetch network-config from seedfrom; newer
	// releases do, and it costs one request.
	var nc []byte
	if b, err := read("network-config"); err == nil && len(b) > 0 {
		d.networkConfig, nc = b, b
	}
	// The manifest beside the parts (BASE + "seed-manifest"); none is an
	// unsigned seed.
	t := readerTree(func(name string) ([]byte, error) {
		b, err := read(name)
		if IsNotFound(err) {
			return nil, fs.ErrNotExist
		}
		return b, err
	})
	parts := map[string][]byte{"meta-data": md, "user-data": ud, "vendor-data": d.vendorData, "network-config": nc}
	return d.served(t, parts, func(file string) string { return Redact(nameURL(file)) })
}

// readerTree is a fileTree of a read function (a seedfrom base).
type readerTree func(name string) ([]byte, error)

func (t readerTree) ReadFile(name string) ([]byte, error) { return t(name) }
func (t readerTree) ReadDir(string) ([]string, error)     { return nil, nil }

// parseNoCloudMeta parses meta-data: YAML (JSON is YAML too), a mapping
// or nothing.
func parseNoCloudMeta(data []byte, where string) (map[string]any, error) {
	v, err := yaml11.Load(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", where, err)
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("parse %s: want a mapping of keys, got %T", where, v)
}

func noCloudSeed(d *noCloudData) (*seed.Seed, error) {
	s := &seed.Seed{
		Datasource: "NoCloud",
		Platform:   "nocloud",
		CloudName:  "unknown",
		UserData:   d.userData,
		VendorData: d.vendorData,
		Documents:  d.docs,
		Manifests:  d.manifests,
		Bootstrap:  d.bootstrap,
	}
	m, err := seed.NoCloudMeta(d.meta, d.defaultID)
	if err != nil {
		return nil, fmt.Errorf("read NoCloud: %w", err)
	}
	s.SetMeta(m)
	if d.metaSources <= 1 {
		s.MetaRaw = d.metaRaw
	}
	src := strings.Join(d.found, ",")
	kind := "seed-dir"
	for _, f := range d.found {
		switch {
		case strings.HasPrefix(f, "/dev"):
			kind = "config-disk"
		case strings.HasPrefix(f, "smbios-") && kind == "seed-dir":
			kind = "smbios"
		}
	}
	s.Subplatform = fmt.Sprintf("%s (%s)", kind, src)
	switch {
	case len(d.networkConfig) > 0:
		s.NetworkConfig = d.networkConfig
		f, err := seed.NetworkConfigFormat(d.networkConfig)
		if err != nil {
			return nil, fmt.Errorf("read NoCloud network-config: %w", err)
		}
		s.NetworkFormat = f
	case len(m.NetworkConfig) > 0:
		s.NetworkConfig, s.NetworkFormat = m.NetworkConfig, m.NetworkFormat
	}
	return s, nil
}

// scalar renders a metadata value as cloud-init's str() would for
// scalars; "" for nil.
func scalar(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(s)
	case float64:
		return yaml11.FormatFloat(s)
	case map[string]any, []any:
		return ""
	}
	return fmt.Sprint(v)
}
