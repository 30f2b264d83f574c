package ds

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/seedinit/seedinit/internal/earlyrand"
	"github.com/seedinit/seedinit/seed"
)

// openStackVersions are the metadata versions cloud-init 22.4 knows,
// oldest first; the newest one offered is used, "latest" when none is.
var openStackVersions = []string{
	"2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15",
	"2016-06-30", "2016-10-06", "2017-02-22", "2018-08-27",
}

// openStackSource is where the openstack/ tree is read from: a config
// drive (files) or the metadata service (HTTP).
type openStackSource interface {
	// versions lists the entries of openstack/.
	versions(ctx context.Context) ([]string, error)
	// read returns a file below the base, "openstack/latest/user_data".
	read(ctx context.Context, name string) ([]byte, error)
	// where names a file for messages.
	where(name string) string
}

func isMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) || IsNotFound(err) }

// openStackData is the parsed openstack/<version>/ tree.
type openStackData struct {
	version     string
	meta        map[string]any
	userData    []byte
	vendorData  []byte
	networkJSON []byte
	networkENI  []byte
	dsmode      string
	// metaRaw is meta_data.json as served; docs are it, user_data and
	// network_data.json as the seed parts a manifest covers, manifest
	// the seed manifest beside them (openstack/VERSION/seed-manifest).
	// vendor_data.json and vendor_data2.json are converted and joined
	// into vendor-data, which no manifest can list.
	metaRaw  []byte
	docs     []seed.Document
	manifest *seed.SignedManifest
	// files are the injected files meta_data.json lists.
	files []seed.InjectedFile
}

// versionCandidates orders the versions to try: the known ones offered,
// newest first, then "latest". cloud-init tries only the first; trying the
// others when its meta_data.json is missing costs nothing when it is there.
func versionCandidates(offered []string) []string {
	have := map[string]bool{}
	for _, v := range offered {
		have[strings.TrimSpace(v)] = true
	}
	var out []string
	for i := len(openStackVersions) - 1; i >= 0; i-- {
		if have[openStackVersions[i]] {
			out = append(out, openStackVersions[i])
		}
	}
	return append(out, "latest")
}

// readOpenStack reads and checks the tree as cloud-init's read_v2 does.
func readOpenStack(ctx context.Context, src openStackSource) (*openStackData, error) {
	offered, verr := src.versions(ctx)
	var mdRaw []byte
	var version string
	var tried []string
	for _, v := range versionCandidates(offered) {
		name := path.Join("openstack", v, "meta_data.json")
		b, err := src.read(ctx, name)
		if err == nil {
			mdRaw, version = b, v
			break
		}
		if !isMissing(err) {
			return nil, fmt.Errorf("read %s: %w", src.where(name), err)
		}
		tried = append(tried, v)
	}
	if mdRaw == nil {
		msg := fmt.Sprintf("no meta_data.json under openstack/ (tried %s)", strings.Join(tried, ", "))
		if verr != nil {
			return nil, fmt.Errorf("%s; listing versions: %w", msg, verr)
		}
		return nil, fmt.Errorf("%s: %w", msg, fs.ErrNotExist)
	}
	d := &openStackData{version: version, metaRaw: mdRaw}
	meta, err := ParseOpenStackMetadata(mdRaw)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", src.where(path.Join("openstack", version, "meta_data.json")), err)
	}
	d.meta = meta
	optionalFile := func(file string) ([]byte, error) {
		name := path.Join("openstack", version, file)
		b, err := src.read(ctx, name)
		if isMissing(err) {
			return nil, fs.ErrNotExist
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src.where(name), err)
		}
		return b, nil
	}
	optional := func(file string) ([]byte, error) {
		b, err := optionalFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	var errs []error
	if d.userData, err = optional("user_data"); err != nil {
		errs = append(errs, err)
	}
	var vendor [2][]byte
	for i, file := range []string{"vendor_data.json", "vendor_data2.json"} {
		raw, err := optional(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if raw == nil {
			continue
		}
		v, err := ConvertVendorData(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse %s: %w", src.where(path.Join("openstack", version, file)), err))
			continue
		}
		vendor[i] = v
	}
	d.vendorData = joinVendorData(vendor[0], vendor[1])
	if d.networkJSON, err = optional("network_data.json"); err != nil {
		errs = append(errs, err)
	} else if d.networkJSON != nil {
		if err := checkNetworkDataJSON(d.networkJSON); err != nil {
			errs = append(errs, fmt.Errorf("parse %s: %w", src.where(path.Join("openstack", version, "network_data.json")), err))
			d.networkJSON = nil
		}
	}
	if item, ok := meta["network_config"].(map[string]any); ok {
		if cp, _ := item["content_path"].(string); cp != "" {
			name := path.Join("openstack", path.Clean("/" + cp)[1:])
			b, err := src.read(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("read network configuration %s: %w", src.where(name), err))
			} else {
				d.networkENI = b
			}
		}
	}
	if d.files, err = readInjectedFiles(ctx, src, meta); err != nil {
		errs = append(errs, err)
	}
	if m, ok := meta["meta"].(map[string]any); ok {
		d.dsmode, _ = m["dsmode"].(string)
	}
	where := func(file string) string { return src.where(path.Join("openstack", version, file)) }
	metaDoc := seed.Document{Part: "meta-data", Where: where("meta_data.json"), Content: mdRaw}
	if m, err := openStackMeta(mdRaw); err != nil {
		metaDoc.MetaErr = err.Error()
	} else {
		metaDoc.Meta = &m
	}
	d.docs = append(d.docs, metaDoc)
	if d.userData != nil {
		d.docs = append(d.docs, seed.Document{Part: "user-data", Where: where("user_data"), Content: d.userData})
	}
	if d.networkJSON != nil {
		d.docs = append(d.docs, seed.Document{Part: "network-config", Where: where("network_data.json"), Content: d.networkJSON, Format: "network_data.json"})
	}
	if d.networkENI != nil {
		d.docs = append(d.docs, seed.Document{Part: "network-config", Where: "network_config's content_path", Content: d.networkENI, Format: "eni"})
	}
	manifest, err := seed.ReadManifest(optionalFile, where)
	if err != nil {
		errs = append(errs, err)
	}
	d.manifest = manifest
	return d, errors.Join(errs...)
}

// maxInjectedFiles bounds meta_data.json's files: Nova's default quota is
// 5 (injected_files); a drive that lists more than this is broken or
// hostile, and each file is read whole.
const maxInjectedFiles = 100

// readInjectedFiles reads the files meta_data.json injects (Nova's
// personality files) as cloud-init's read_v2 does: each item with a path
// is read from its content_path below openstack/, and one that cannot be
// read breaks the source (its BrokenMetadata); an item without a path is
// passed over. The content_path is cleaned as a path below openstack/:
// cloud-init joins its pieces to the mount point, ".." included, which
// reads outside the drive. The path is made absolute, as cloud-init's
// write_injected_files makes it.
func readInjectedFiles(ctx context.Context, src openStackSource, meta map[string]any) ([]seed.InjectedFile, error) {
	v, ok := meta["files"]
	if !ok || v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("read meta_data.json's files: want a list, got %T", v)
	}
	if len(items) > maxInjectedFiles {
		return nil, fmt.Errorf("read meta_data.json's files: %d of them, more than the %d seedinit reads", len(items), maxInjectedFiles)
	}
	var out []seed.InjectedFile
	for i, it := range items {
		item, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("read meta_data.json's files item %d: want an object, got %T", i, it)
		}
		p, ok := item["path"]
		if !ok {
			continue
		}
		target, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("read meta_data.json's files item %d: path: want a string, got %T", i, p)
		}
		cp, _ := item["content_path"].(string)
		if strings.Trim(cp, "/") == "" {
			return nil, fmt.Errorf("read injected file %s: no valid content path", target)
		}
		name := path.Join("openstack", path.Clean("/" + cp)[1:])
		b, err := src.read(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("read injected file %s from %s: %w", target, src.where(name), err)
		}
		out = append(out, seed.InjectedFile{Path: path.Clean("/" + target), Content: b, Where: src.where(name)})
	}
	return out, nil
}

// InjectedFilesIn reads the files a config drive's tree at dir (on the
// build host: seedinit seed sign) injects, as listed in
// openstack/VERSION/meta_data.json.
func InjectedFilesIn(dir, version string) ([]seed.InjectedFile, error) {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))) }
	name := path.Join("openstack", version, "meta_data.json")
	raw, err := read(name)
	if err != nil {
		return nil, err
	}
	meta, err := ParseOpenStackMetadata(raw)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, name), err)
	}
	return readInjectedFiles(context.Background(), treeSource{t: readerTree(read), name: dir}, meta)
}

// ParseOpenStackMetadata parses meta_data.json: a JSON object with a
// uuid, and a random_seed that must be base64.
func ParseOpenStackMetadata(raw []byte) (map[string]any, error) {
	var md map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if md == nil {
		return nil, errors.New("want a JSON object, got null")
	}
	if _, ok := md["uuid"]; !ok {
		return nil, errors.New("no 'uuid' entry in metadata")
	}
	if rs, ok := md["random_seed"]; ok {
		s, ok := rs.(string)
		if !ok {
			return nil, fmt.Errorf("random_seed: want a base64 string, got %T", rs)
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("badly formatted random_seed: %w", err)
		}
	}
	return normalizeJSON(md).(map[string]any), nil
}

// normalizeJSON turns json.Number into int64 or float64, the types YAML
// decoding gives, so metadata from any source looks the same.
func normalizeJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeJSON(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalizeJSON(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i)
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func checkNetworkDataJSON(raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("want a JSON object, got %T", v)
	}
	return nil
}

// ConvertVendorData turns vendor_data.json into user-data-like bytes, as
// cloud-init's convert_vendordata does: a string is the data, an object's
// "cloud-init" key is (one level only), a list is several parts, and
// null or empty is nothing.
func ConvertVendorData(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	return convertVendor(v, true)
}

func convertVendor(v any, recurse bool) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if t == "" {
			return nil, nil
		}
		return []byte(t), nil
	case bool:
		if !t {
			return nil, nil
		}
	case float64:
		if t == 0 {
			return nil, nil
		}
	case []any:
		if len(t) == 0 {
			return nil, nil
		}
		var parts [][]byte
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("item %d: want a string part, got %T", i, e)
			}
			parts = append(parts, []byte(s))
		}
		return multipartOf(parts...), nil
	case map[string]any:
		if len(t) == 0 {
			return nil, nil
		}
		if recurse {
			return convertVendor(t["cloud-init"], false)
		}
		return nil, errors.New("vendordata['cloud-init'] cannot be an object")
	}
	return nil, fmt.Errorf("unknown type for vendor data: %T", v)
}

// joinVendorData keeps vendor_data.json and vendor_data2.json both: one
// MIME multipart with vendor_data2 last, so its config wins, as its later
// processing does in cloud-init.
func joinVendorData(a, b []byte) []byte {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return multipartOf(a, b)
}

// multipartOf wraps parts in a MIME multipart that seed's user-data
// decoder reads as separate parts, each typed by its content.
func multipartOf(parts ...[]byte) []byte {
	// mime/multipart's NewWriter draws its boundary from crypto/rand,
	// which would hold PID 1 until the kernel's pool is ready; a boundary
	// needs only to be unlikely in the parts.
	var b [16]byte
	earlyrand.Read(b[:])
	return multipartWith(hex.EncodeToString(b[:]), parts...)
}

// multipartWith is multipartOf with a given boundary, laid out as
// mime/multipart's Writer lays it out.
func multipartWith(boundary string, parts ...[]byte) []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, "Content-Type: multipart/mixed; boundary=\"%s\"\nMIME-Version: 1.0\n\n", boundary)
	for i, p := range parts {
		if i > 0 {
			out.WriteString("\r\n")
		}
		fmt.Fprintf(&out, "--%s\r\nContent-Type: text/x-not-multipart\r\n\r\n", boundary)
		out.Write(p)
	}
	fmt.Fprintf(&out, "\r\n--%s--\r\n", boundary)
	return out.Bytes()
}

// openStackSeed maps the tree to a seed as cloud-init's ConfigDrive and
// OpenStack datasources do.
func openStackSeed(d *openStackData, dsName string) *seed.Seed {
	s := &seed.Seed{
		Datasource: dsName,
		Platform:   "openstack",
		CloudName:  strings.ToLower(dsName),
		UserData:   d.userData,
		VendorData: d.vendorData,
		MetaRaw:    d.metaRaw,
		Documents:  d.docs,
		Files:      d.files,
	}
	s.SetMeta(openStackMetaOf(d.meta))
	if d.manifest != nil {
		s.Manifests = []seed.SignedManifest{*d.manifest}
	}
	switch {
	case d.networkJSON != nil:
		s.NetworkConfig, s.NetworkFormat = d.networkJSON, "network_data.json"
	case d.networkENI != nil:
		s.NetworkConfig, s.NetworkFormat = d.networkENI, "eni"
	}
	return s
}

// openStackMetaOf reads meta_data.json's tree as cloud-init's
// ConfigDrive and OpenStack datasources do; md becomes the tree, with
// cloud-init's instance-id and local-hostname added.
func openStackMetaOf(md map[string]any) seed.Meta {
	md["instance-id"] = md["uuid"]
	if h, ok := md["hostname"]; ok {
		md["local-hostname"] = h
	}
	m := seed.Meta{
		Metadata:         md,
		InstanceID:       scalar(md["uuid"]),
		LocalHostname:    scalar(md["hostname"]),
		AvailabilityZone: scalar(md["availability_zone"]),
		PublicKeys:       seed.NormalizePublicKeys(md["public_keys"]),
	}
	if cn := scalar(md["cloud-name"]); cn != "" {
		m.CloudName = strings.ToLower(cn)
	}
	return m
}

// openStackMeta reads a meta_data.json document on its own.
func openStackMeta(raw []byte) (seed.Meta, error) {
	md, err := ParseOpenStackMetadata(raw)
	if err != nil {
		return seed.Meta{}, err
	}
	return openStackMetaOf(md), nil
}

// openStackDMI is ds-identify's dscheck_OpenStack without the config
// drive part: Nova's product names and the asset tags of clouds built on
// it.
func openStackDMI(env *Env) (Evidence, bool) {
	names := []string{"OpenStack Nova", "OpenStack Compute"}
	for _, n := range names {
		if env.DMIField("product_name") == n {
			return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_name %q", n)}, true
		}
	}
	for _, tag := range append([]string{"OpenTelekomCloud", "SAP CCloud VM", "HUAWEICLOUD"}, names...) {
		if env.DMIField("chassis_asset_tag") == tag {
			return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI chassis_asset_tag %q", tag)}, true
		}
	}
	return Evidence{}, false
}

// ---- ConfigDrive ----

func init() { Register(configDrive{}) }

const configDriveSeedDir = "/var/lib/cloud/seed/config_drive"

type configDrive struct{}

func (configDrive) Name() string       { return "ConfigDrive" }
func (configDrive) NeedsNetwork() bool { return false }

func (configDrive) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if env.Root != nil && env.Root.Exists(configDriveSeedDir+"/openstack/latest/meta_data.json") {
		return Evidence{Verdict: Found, Reason: "seed directory " + configDriveSeedDir}, nil
	}
	devs, err := ByLabel(ctx, env.Devices, "config-2")
	if len(devs) > 0 {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("label %s on %s", devs[0].Label, devs[0].Path)}, nil
	}
	if err != nil {
		return Evidence{Reason: "no config-2 disk"}, fmt.Errorf("look for a config-2 disk: %w", err)
	}
	return Evidence{Reason: "no config-2 disk or " + configDriveSeedDir}, nil
}

// treeSource reads the openstack/ tree from files.
type treeSource struct {
	t    fileTree
	name string
}

func (s treeSource) versions(context.Context) ([]string, error) { return s.t.ReadDir("openstack") }
func (s treeSource) read(_ context.Context, name string) ([]byte, error) {
	return s.t.ReadFile(name)
}
func (s treeSource) where(name string) string { return s.name + "/" + name }

func (c configDrive) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	var errs []error
	if env.Root != nil && env.Root.Exists(configDriveSeedDir) {
		s, err := readConfigDrive(ctx, rootTree{root: env.Root, dir: configDriveSeedDir}, configDriveSeedDir)
		if err == nil {
			s.Subplatform = fmt.Sprintf("seed-dir (%s)", configDriveSeedDir)
			return s, nil
		}
		errs = append(errs, err)
	}
	devs, err := ByLabel(ctx, env.Devices, "config-2")
	if err != nil {
		errs = append(errs, fmt.Errorf("look for a config-2 disk: %w", err))
	}
	for _, dev := range devs {
		if dev.FSType != "iso9660" && dev.FSType != "vfat" {
			continue
		}
		fsys, done, err := openDevice(env, dev.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s, err := readConfigDrive(ctx, fsys, dev.Path)
		if err == nil {
			s.Bootstrap, err = readBootstrap(env, fsys, dev.Path)
		}
		done()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.Subplatform = fmt.Sprintf("config-disk (%s)", dev.Path)
		return s, nil
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no config-2 disk"))
	}
	return nil, fmt.Errorf("read ConfigDrive: %w", errors.Join(errs...))
}

func readConfigDrive(ctx context.Context, t fileTree, where string) (*seed.Seed, error) {
	d, err := readOpenStack(ctx, treeSource{t: t, name: where})
	if d == nil {
		return nil, err
	}
	if err != nil {
		// Optional files that are broken make the whole drive broken in
		// cloud-init (BrokenMetadata); so here.
		return nil, err
	}
	if d.dsmode == "disabled" || d.dsmode == "pass" {
		return nil, fmt.Errorf("read %s: dsmode is %s", where, d.dsmode)
	}
	// The ec2/ tree is checked as cloud-init does; its content is not
	// part of the seed.
	if raw, err := t.ReadFile("ec2/latest/meta-data.json"); err == nil {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("parse %s/ec2/latest/meta-data.json: %w", where, err)
		}
	}
	return openStackSeed(d, "ConfigDrive"), nil
}

// ---- OpenStack metadata service ----

func init() { Register(openStack{}) }

const openStackMetadataURL = "http://169.254.169.254"

type openStack struct{}

func (openStack) Name() string       { return "OpenStack" }
func (openStack) NeedsNetwork() bool { return true }

func (openStack) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if devs, _ := ByLabel(ctx, env.Devices, "config-2"); len(devs) > 0 {
		return Evidence{Reason: "a config drive is there (" + devs[0].Path + "): ConfigDrive serves it"}, nil
	}
	if ev, ok := openStackDMI(env); ok {
		return ev, nil
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		// ds-identify's LP: #1715241: other arches lack the DMI strings.
		return Evidence{Verdict: Maybe, Reason: "no OpenStack DMI strings, but this arch may not have them"}, nil
	}
	return Evidence{Reason: "no OpenStack DMI product name or asset tag"}, nil
}

// openStackURLs are the metadata_urls to try, IPv4 then the link-local
// IPv6 address on the ephemeral interface.
func openStackURLs(env *Env) []string {
	defaults := []string{openStackMetadataURL}
	if env.Interface != "" {
		defaults = append(defaults, "http://[fe80::a9fe:a9fe%25"+env.Interface+"]")
	}
	return baseURLs(env, env.Settings("OpenStack"), "metadata_urls", defaults...)
}

// httpSource reads the openstack/ tree from a metadata service.
type httpSource struct {
	f       *Fetcher
	base    string
	offered []string
	listed  bool
}

func (s *httpSource) url(name string) string {
	return strings.TrimRight(s.base, "/") + "/" + name
}

func (s *httpSource) versions(ctx context.Context) ([]string, error) {
	if s.listed {
		return s.offered, nil
	}
	resp, err := s.f.Get(ctx, s.url("openstack"), nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(resp.Body), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	s.offered, s.listed = out, true
	return out, nil
}

func (s *httpSource) read(ctx context.Context, name string) ([]byte, error) {
	resp, err := s.f.Get(ctx, s.url(name), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (s *httpSource) where(name string) string { return Redact(s.url(name)) }

func (o openStack) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	f := env.HTTP().WithOptions(env.Config.FetchOptionsFor("OpenStack"))
	bases := openStackURLs(env)
	// The version listing is the cheap liveness check, asked of every
	// base at once (IPv4 and the link-local IPv6 address); the one that
	// answers first is read, then the others in turn.
	open := func(ctx context.Context, base string) (*httpSource, error) {
		src := &httpSource{f: f, base: base}
		if _, err := src.versions(ctx); err != nil {
			if !IsNotFound(err) {
				return nil, fmt.Errorf("read OpenStack metadata at %s: %w", Redact(base), err)
			}
			src.listed = true // no listing: "latest" only
		}
		return src, nil
	}
	first, firstSrc, errs := firstAnswer(ctx, bases, open)
	if first < 0 {
		return nil, errors.Join(errs...)
	}
	errs = nil
	order := []int{first}
	for i := range bases {
		if i != first {
			order = append(order, i)
		}
	}
	for n, i := range order {
		base, src := bases[i], firstSrc
		if n > 0 {
			if ctx.Err() != nil {
				break
			}
			var err error
			if src, err = open(ctx, base); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		d, err := readOpenStack(ctx, src)
		if d == nil {
			errs = append(errs, fmt.Errorf("read OpenStack metadata at %s: %w", Redact(base), err))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read OpenStack metadata at %s: %w", Redact(base), err))
			continue
		}
		if d.dsmode == "disabled" {
			return nil, fmt.Errorf("read OpenStack metadata at %s: dsmode is disabled", Redact(base))
		}
		s := openStackSeed(d, "OpenStack")
		s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(base))
		return s, nil
	}
	return nil, errors.Join(errs...)
}
