// Package seedimg builds the seed disks that cloud-init and seedinit read
// at first boot: NoCloud (label cidata) and OpenStack config drives (label
// config-2), as ISO9660 with Rock Ridge and Joliet (what genisoimage -J -r
// makes) or as FAT (what mkfs.vfat + mcopy make). It replaces
// cloud-localds and Nova's genisoimage recipe with go-diskfs.
package seedimg

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// Kind is the datasource layout on the image.
type Kind string

// The layouts.
const (
	NoCloud     Kind = "nocloud"
	ConfigDrive Kind = "configdrive"
	// OVF is an OVF environment (ovf-env.xml) on an ISO9660 disc, as
	// vSphere's ISO transport attaches it.
	OVF Kind = "ovf"
)

// Format is the image's filesystem.
type Format string

// The filesystems.
const (
	ISO  Format = "iso"
	VFAT Format = "vfat"
	// XML is the OVF environment document alone, for a seed directory
	// (/var/lib/cloud/seed/ovf) or to read the properties for vCenter.
	XML Format = "xml"
)

// ParseKind reads a --kind value.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "nocloud", "cidata":
		return NoCloud, nil
	case "configdrive", "config-drive", "config-2", "openstack":
		return ConfigDrive, nil
	case "ovf", "vmware", "ovf-env":
		return OVF, nil
	}
	return "", fmt.Errorf("parse --kind %q: want nocloud, configdrive or ovf", s)
}

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "iso", "iso9660":
		return ISO, nil
	case "vfat", "fat", "fat16", "fat32":
		return VFAT, nil
	case "xml":
		return XML, nil
	}
	return "", fmt.Errorf("parse --format %q: want iso, vfat or xml", s)
}

// Options describe one seed image. A nil field is a file the image does
// not carry.
type Options struct {
	Kind   Kind   // default NoCloud
	Format Format // default ISO

	// MetaData is NoCloud meta-data (YAML or JSON: instance-id,
	// local-hostname, public-keys, ...) or an OpenStack meta_data.json
	// (uuid, hostname, name, public_keys, ...); either is turned into the
	// other layout's form as needed. Nil gives cloud-localds' default,
	// instance-id iid-local01.
	MetaData []byte
	// UserData is copied byte for byte (cloud-config, script, MIME, gzip).
	UserData []byte
	// VendorData is NoCloud vendor-data; on a config drive it becomes
	// vendor_data.json (a JSON document as given, anything else as a JSON
	// string, which cloud-init reads as the vendor-data itself).
	VendorData []byte
	// NetworkConfig is NoCloud network-config (v1 or v2 YAML); on a config
	// drive it must be an OpenStack network_data.json.
	NetworkConfig []byte

	// Files are files the seed injects into the target (a config drive
	// only), laid out as Nova lays out personality files: the content in
	// openstack/content/NNNN, named with its path in meta_data.json's
	// "files".
	Files []seed.InjectedFile
	// Bootstrap is a tree for the image's own first-boot agent, laid out
	// below bootstrap/ (a NoCloud disk or a config drive), each file and
	// directory with its mode and owner on an ISO (Rock Ridge).
	Bootstrap []seed.BootstrapFile

	// Sign, when set, signs the seed (seedinit seed build --sign-key): it
	// is given what the image holds that a reader applies (SignInput),
	// and returns the manifest and its signature, which go beside the
	// parts (seed.ManifestFile and seed.ManifestSignatureFile; on a
	// config drive in each openstack/VERSION/, over its meta_data.json,
	// user_data and network_data.json, and the injected files).
	Sign func(in SignInput) (manifest, signature []byte, err error)

	// Label overrides the filesystem label (cidata, config-2).
	Label string
	// Size is the FAT image size in bytes; 0 picks one (64 MiB for a
	// config drive, as Nova does; the smallest comfortable FAT16 for NoCloud).
	Size int64
}

// SignInput is what a signed seed's manifest lists.
type SignInput struct {
	// Parts are the seed's parts by role (seed.PartNames), as the image
	// holds them.
	Parts map[string][]byte
	// Files are the injected files' content by their path in the target.
	Files map[string][]byte
	// Bootstrap are the bootstrap tree's files (not its directories).
	Bootstrap []seed.BootstrapFile
}

// ReadFiles fills the data fields from files; an empty name leaves its
// field nil.
func (o *Options) ReadFiles(userData, metaData, networkConfig, vendorData string) error {
	var errs []error
	for _, f := range []struct {
		flag, name string
		dst        *[]byte
	}{
		{"--user-data", userData, &o.UserData},
		{"--meta-data", metaData, &o.MetaData},
		{"--network-config", networkConfig, &o.NetworkConfig},
		{"--vendor-data", vendorData, &o.VendorData},
	} {
		if f.name == "" {
			continue
		}
		b, err := os.ReadFile(f.name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s %s: %w", f.flag, f.name, err))
			continue
		}
		*f.dst = b
	}
	return errors.Join(errs...)
}

// DefaultInstanceID is what cloud-localds writes when no meta-data is given.
const DefaultInstanceID = "iid-local01"

// Label is the filesystem label the image gets.
func (o Options) label() string {
	if o.Label != "" {
		return o.Label
	}
	switch o.Kind {
	case ConfigDrive:
		return "config-2"
	case OVF:
		return ovfLabel
	}
	return "cidata"
}

func (o Options) withDefaults() Options {
	if o.Kind == "" {
		o.Kind = NoCloud
	}
	if o.Format == "" {
		o.Format = ISO
	}
	return o
}

// Layout returns the files of the image, slash-separated path relative to
// the image's root → content, exactly as Build writes them.
func Layout(o Options) (map[string][]byte, error) {
	o = o.withDefaults()
	var files map[string][]byte
	var err error
	// roles maps the files a reader takes as seed parts to their roles,
	// by the directory they are in.
	var roles map[string]string
	switch o.Kind {
	case NoCloud:
		if len(o.Files) > 0 {
			return nil, errors.New("lay out seed image: injected files are a config drive's (--kind configdrive)")
		}
		files, err = noCloudLayout(o)
		roles = map[string]string{}
		for _, p := range seed.PartNames {
			roles[p] = p
		}
	case ConfigDrive:
		files, err = configDriveLayout(o)
		roles = map[string]string{"meta_data.json": "meta-data", "user_data": "user-data", "network_data.json": "network-config"}
	case OVF:
		if len(o.Bootstrap) > 0 {
			return nil, errors.New("lay out OVF environment: a bootstrap tree goes on a NoCloud disk or a config drive")
		}
		// Signed as it is laid out: the manifest is in the document.
		return ovfLayout(o)
	default:
		return nil, fmt.Errorf("lay out seed image: unknown kind %q", o.Kind)
	}
	if err != nil {
		return files, err
	}
	for _, f := range o.Bootstrap {
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.HasPrefix(f.Path, "../") || f.Path == ".." {
			return nil, fmt.Errorf("lay out seed image: bootstrap path %q: want a relative, clean path", f.Path)
		}
		if !f.Dir {
			files[path.Join(bootstrapDir, f.Path)] = f.Content
		}
	}
	if o.Sign == nil {
		return files, nil
	}
	dirs := map[string]map[string][]byte{}
	for name, content := range files {
		role, ok := roles[path.Base(name)]
		if !ok || strings.HasPrefix(name, "ec2/") || strings.HasPrefix(name, bootstrapDir+"/") {
			continue
		}
		dir := path.Dir(name)
		if dirs[dir] == nil {
			dirs[dir] = map[string][]byte{}
		}
		dirs[dir][role] = content
	}
	injected := map[string][]byte{}
	for _, f := range o.Files {
		injected[path.Clean("/"+f.Path)] = f.Content
	}
	var tree []seed.BootstrapFile
	for _, f := range o.Bootstrap {
		if !f.Dir {
			tree = append(tree, f)
		}
	}
	for dir, parts := range dirs {
		manifest, sig, err := o.Sign(SignInput{Parts: parts, Files: injected, Bootstrap: tree})
		if err != nil {
			return nil, fmt.Errorf("sign the seed in %s: %w", dir, err)
		}
		files[path.Join(dir, seed.ManifestFile)] = manifest
		files[path.Join(dir, seed.ManifestSignatureFile)] = sig
	}
	return files, nil
}

func noCloudLayout(o Options) (map[string][]byte, error) {
	files := map[string][]byte{}
	md := o.MetaData
	if md == nil {
		md = []byte("instance-id: " + DefaultInstanceID + "\n")
	}
	files["meta-data"] = md
	// cloud-init's NoCloud requires user-data beside meta-data, even empty.
	files["user-data"] = o.UserData
	if files["user-data"] == nil {
		files["user-data"] = []byte{}
	}
	if o.VendorData != nil {
		files["vendor-data"] = o.VendorData
	}
	if o.NetworkConfig != nil {
		files["network-config"] = o.NetworkConfig
	}
	return files, nil
}

// openStackVersions are written with the same files: cloud-init picks the
// newest version it knows (2012-08-10 here), other readers take latest.
var openStackVersions = []string{"2012-08-10", "latest"}

// ec2Versions hold the EC2-style metadata Nova puts beside it.
var ec2Versions = []string{"2009-04-04", "latest"}

func configDriveLayout(o Options) (map[string][]byte, error) {
	var errs []error
	md, err := parseMetaData(o.MetaData)
	if err != nil {
		return nil, err
	}
	osmd, err := openStackMetaData(md)
	if err != nil {
		errs = append(errs, err)
	}
	files := map[string][]byte{}
	put := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("encode %s: %w", name, err))
			return
		}
		for _, ver := range openStackVersions {
			files[path.Join("openstack", ver, name)] = b
		}
	}
	if len(o.Files) > 0 {
		if _, given := osmd["files"]; given {
			errs = append(errs, errors.New("lay out config drive: the meta-data has files of its own beside the injected files given"))
		}
		var list []any
		for i, f := range o.Files {
			if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
				errs = append(errs, fmt.Errorf("lay out config drive: injected file %q: want an absolute, clean path", f.Path))
				continue
			}
			// Nova's names: four hex digits below openstack/content/.
			name := fmt.Sprintf("content/%04x", i)
			files[path.Join("openstack", name)] = f.Content
			list = append(list, map[string]any{"path": f.Path, "content_path": "/" + name})
		}
		osmd["files"] = list
	}
	put("meta_data.json", osmd)
	if o.UserData != nil {
		for _, ver := range openStackVersions {
			files[path.Join("openstack", ver, "user_data")] = o.UserData
		}
	}
	if o.VendorData != nil {
		put("vendor_data.json", vendorDataJSON(o.VendorData))
	}
	if o.NetworkConfig != nil {
		var nd map[string]any
		if err := json.Unmarshal(o.NetworkConfig, &nd); err != nil {
			errs = append(errs, fmt.Errorf("read network-config for a config drive: want OpenStack network_data.json (links, networks, services): %w", err))
		} else {
			put("network_data.json", nd)
		}
	}
	ec2, err := json.Marshal(ec2MetaData(osmd))
	if err != nil {
		errs = append(errs, fmt.Errorf("encode ec2 meta-data.json: %w", err))
	}
	for _, ver := range ec2Versions {
		files[path.Join("ec2", ver, "meta-data.json")] = ec2
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("lay out config drive: %w", err)
	}
	return files, nil
}

func parseMetaData(b []byte) (map[string]any, error) {
	if b == nil {
		return map[string]any{"instance-id": DefaultInstanceID}, nil
	}
	v, err := yaml11.Load(b)
	if err != nil {
		return nil, fmt.Errorf("parse meta-data: %w", err)
	}
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("parse meta-data: want a mapping, got %T", v)
}

// noCloudToOpenStack maps NoCloud/EC2 meta-data keys to their
// meta_data.json names; the first key found wins.
var noCloudToOpenStack = []struct {
	openstack string
	aliases   []string
}{
	{"uuid", []string{"uuid", "instance-id", "instance_id"}},
	{"hostname", []string{"hostname", "local-hostname", "local_hostname"}},
	{"availability_zone", []string{"availability_zone", "availability-zone"}},
	{"launch_index", []string{"launch_index", "ami-launch-index"}},
}

// openStackMetaData turns meta-data into a meta_data.json document: known
// NoCloud names are renamed, public keys normalised to Nova's name → key
// mapping (plus its "keys" list), and every other key is kept as given.
func openStackMetaData(md map[string]any) (map[string]any, error) {
	out := map[string]any{}
	renamed := map[string]bool{}
	for _, k := range noCloudToOpenStack {
		for _, a := range k.aliases {
			renamed[a] = true
			if v, ok := md[a]; ok {
				if _, done := out[k.openstack]; !done {
					out[k.openstack] = v
				}
			}
		}
	}
	for _, k := range []string{"public_keys", "public-keys", "keys", "placement"} {
		renamed[k] = true
	}
	for k, v := range md {
		if !renamed[k] {
			out[k] = v
		}
	}
	if az, ok := md["placement"].(map[string]any); ok && out["availability_zone"] == nil {
		if v, ok := az["availability-zone"]; ok {
			out["availability_zone"] = v
		}
	}
	if out["uuid"] == nil {
		return out, errors.New("read meta-data: no instance-id (or uuid): cloud-init refuses a config drive without one")
	}
	out["uuid"] = fmt.Sprint(out["uuid"])
	if h, ok := out["hostname"]; ok {
		out["hostname"] = fmt.Sprint(h)
		if _, ok := out["name"]; !ok {
			short, _, _ := strings.Cut(fmt.Sprint(h), ".")
			out["name"] = short
		}
	}
	if _, ok := out["launch_index"]; !ok {
		out["launch_index"] = 0
	}
	keys, err := publicKeys(md)
	if err != nil {
		return out, err
	}
	if len(keys) > 0 {
		byName := map[string]string{}
		var list []map[string]string
		for _, k := range keys {
			byName[k.name] = k.key
			list = append(list, map[string]string{"name": k.name, "type": "ssh", "data": k.key})
		}
		out["public_keys"] = byName
		out["keys"] = list
	}
	return out, nil
}

type namedKey struct{ name, key string }

// publicKeys reads public_keys (Nova: name → key), public-keys (NoCloud: a
// string, a list, or EC2's name → key or index → {openssh-key}) and keys
// (Nova: a list of {name, type, data}).
func publicKeys(md map[string]any) ([]namedKey, error) {
	var out []namedKey
	seen := map[string]bool{}
	add := func(name, key string) {
		key = strings.TrimSpace(key)
		if key == "" || seen[key] {
			return
		}
		seen[key] = true
		if name == "" {
			name = fmt.Sprintf("key-%d", len(out))
		}
		out = append(out, namedKey{name, key})
	}
	var errs []error
	for _, field := range []string{"public_keys", "public-keys"} {
		switch v := md[field].(type) {
		case nil:
		case string:
			for _, line := range strings.Split(v, "\n") {
				add("", line)
			}
		case []any:
			for i, item := range v {
				s, ok := item.(string)
				if !ok {
					errs = append(errs, fmt.Errorf("read meta-data %s item %d: want a key string, got %T", field, i, item))
					continue
				}
				add("", s)
			}
		case map[string]any:
			names := make([]string, 0, len(v))
			for n := range v {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				switch kv := v[n].(type) {
				case string:
					add(n, kv)
				case []any:
					for _, k := range kv {
						if s, ok := k.(string); ok {
							add(n, s)
						}
					}
				case map[string]any:
					if s, ok := kv["openssh-key"].(string); ok {
						add(n, s)
					}
				default:
					errs = append(errs, fmt.Errorf("read meta-data %s.%s: want a key string, got %T", field, n, kv))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("read meta-data %s: want a string, list or mapping, got %T", field, v))
		}
	}
	if list, ok := md["keys"].([]any); ok {
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Errorf("read meta-data keys item %d: want a mapping, got %T", i, item))
				continue
			}
			name, _ := m["name"].(string)
			data, _ := m["data"].(string)
			add(name, data)
		}
	}
	return out, errors.Join(errs...)
}

// ec2MetaData is the ec2/<version>/meta-data.json Nova writes beside the
// OpenStack tree, with the keys cloud-init's ec2 helpers look at.
func ec2MetaData(osmd map[string]any) map[string]any {
	out := map[string]any{"instance-id": osmd["uuid"]}
	if h, ok := osmd["hostname"]; ok {
		out["hostname"] = h
		out["local-hostname"] = h
	}
	if az, ok := osmd["availability_zone"]; ok {
		out["placement"] = map[string]any{"availability-zone": az}
	}
	if li, ok := osmd["launch_index"]; ok {
		out["ami-launch-index"] = li
	}
	if keys, ok := osmd["keys"].([]map[string]string); ok && len(keys) > 0 {
		pk := map[string]any{}
		for i, k := range keys {
			pk[fmt.Sprint(i)] = map[string]string{"openssh-key": k["data"]}
		}
		out["public-keys"] = pk
	}
	return out
}

// vendorDataJSON keeps a JSON vendor_data.json as it is; other vendor-data
// (a #cloud-config, a script) becomes a JSON string, which cloud-init's
// convert_vendordata uses as the vendor-data itself.
func vendorDataJSON(b []byte) any {
	var v any
	if json.Unmarshal(b, &v) == nil {
		return v
	}
	return string(b)
}

// writeTree lays files out under dir.
func writeTree(dir string, files map[string][]byte) error {
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// sortedNames returns the file names and every directory above them,
// parents first.
func sortedNames(files map[string][]byte) (dirs, names []string) {
	seen := map[string]bool{}
	for name := range files {
		names = append(names, name)
		for d := path.Dir(name); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	sort.Strings(names)
	return dirs, names
}
