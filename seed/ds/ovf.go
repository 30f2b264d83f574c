package ds

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/shacrypt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() { Register(ovfDatasource{}) }

// Where cloud-init's OVF datasource looks: its seed directory, then the
// transports, VMware's guestinfo.ovfEnv and an ISO9660 CD-ROM, on which
// the environment has one of these names.
const ovfSeedDir = "/var/lib/cloud/seed/ovf"

var ovfEnvNames = []string{"ovf-env.xml", "ovf_env.xml", "OVF_ENV.XML", "OVF-ENV.XML"}

// ovfEnvNamespace is the OVF environment's (DSP0243) namespace, that of
// a Property's key and value attributes.
const ovfEnvNamespace = "http://schemas.dmtf.org/ovf/environment/1"

// The properties that carry a signed OVF seed's manifest and its
// signature, each base64 (an XML attribute's value keeps no newline).
const (
	OVFManifestProperty          = "seedinit.seed-manifest"
	OVFManifestSignatureProperty = "seedinit.seed-manifest.sig"
)

// ovfDefaultInstanceID is cloud-init's instance-id for an OVF
// environment that gives none.
const ovfDefaultInstanceID = "iid-dsovf"

// ovfDatasource is cloud-init's OVF (and OVFNet: a seedfrom over http):
// vSphere's vApp properties (FortiGate-VM, BIG-IP VE and ASAv read their
// first settings from them) in an OVF environment document, on the CD-ROM
// vSphere attaches (the "ISO image" transport) or in guestinfo.ovfEnv
// (the "VMware Tools" transport, vmware.go).
type ovfDatasource struct{}

func (ovfDatasource) Name() string       { return "OVF" }
func (ovfDatasource) NeedsNetwork() bool { return false }

func (ovfDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if name, _, ok := ovfSeedFile(env); ok {
		return Evidence{Verdict: Found, Reason: "seed directory " + ovfSeedDir + " (" + name + ")"}, nil
	}
	// ds-identify's dscheck_OVF: Azure's provisioning disc holds an
	// ovf-env.xml too.
	if env.DMIField("chassis_asset_tag") == azureChassisAssetTag {
		return Evidence{Reason: "Azure (its ovf-env.xml is Azure's source)"}, nil
	}
	if src, err := ovfTransport(ctx, env); src != nil {
		return Evidence{Verdict: Found, Reason: "OVF environment (" + src.name + ") in " + src.where, Network: isHTTP(src.env.meta["seedfrom"])}, nil
	} else if err != nil {
		return Evidence{Reason: "no readable OVF environment"}, err
	}
	return Evidence{Reason: "no " + ovfSeedDir + "/ovf-env.xml, no OVF environment on a CD-ROM or in guestinfo.ovfEnv"}, nil
}

// ovfSource is an OVF environment found, read.
type ovfSource struct {
	// where names it for messages and the subplatform: the file, the
	// device, or com.vmware.guestInfo; name is the file's name.
	where, name string
	raw         []byte
	env         *ovfEnvironment
}

// ovfSeedFile finds the environment in the seed directory.
func ovfSeedFile(env *Env) (string, []byte, bool) {
	if env.Root == nil {
		return "", nil, false
	}
	t := rootTree{root: env.Root, dir: ovfSeedDir}
	for _, n := range ovfEnvNames {
		if b, err := t.ReadFile(n); err == nil {
			return n, b, true
		}
	}
	return "", nil, false
}

// ovfTransport finds the environment as cloud-init's transports do:
// guestinfo.ovfEnv, then each ISO9660 CD-ROM (its name as cloud-init's
// maybe_cdrom_device takes it: sr*, hd*, xvd*) whose ovf-env.xml is an
// OVF environment with properties, found by that content whatever the
// disc's label; the NoCloud and config drive labels are another
// source's, as ds-identify has it. A disc whose document is broken is
// an error if no other serves.
func ovfTransport(ctx context.Context, env *Env) (*ovfSource, error) {
	if raw := guestinfoOvfEnv(env); raw != nil {
		r, err := readOVFEnvironment(raw, true)
		if err != nil {
			return nil, fmt.Errorf("read guestinfo.ovfEnv: %w", err)
		}
		return &ovfSource{where: "com.vmware.guestInfo", name: "guestinfo.ovfEnv", raw: raw, env: r}, nil
	}
	if env.Devices == nil {
		return nil, nil
	}
	devs, err := env.Devices.List(ctx)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("list block devices: %w", err))
	}
	for _, d := range devs {
		if d.FSType != "iso9660" || !cdromDevice(d.Path) {
			continue
		}
		switch strings.ToLower(d.Label) {
		case "cidata", "config-2":
			continue
		}
		fsys, done, err := openDevice(env, d.Path)
		if err != nil {
			continue // cloud-init's MountFailedError: the next one
		}
		src, err := ovfOnDisc(fsys, d.Path)
		done()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if src != nil {
			return src, nil
		}
	}
	return nil, errors.Join(errs...)
}

// ovfOnDisc reads the environment on a disc: nil when there is none or
// it is no OVF environment with properties (Azure's).
func ovfOnDisc(fsys fileTree, dev string) (*ovfSource, error) {
	for _, n := range ovfEnvNames {
		raw, err := fsys.ReadFile(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s on %s: %w", n, dev, err)
		}
		r, err := readOVFEnvironment(raw, true)
		if errors.Is(err, errNoOVFProperties) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s on %s: %w", n, dev, err)
		}
		return &ovfSource{where: dev, name: n, raw: raw, env: r}, nil
	}
	return nil, nil
}

// cdromDevice is cloud-init's maybe_cdrom_device with its default
// pattern, udev's CD-ROM names: sr0, hda, xvda.
var cdromName = regexp.MustCompile(`^(sr[0-9]+|hd[a-z]|xvd.*)`)

func cdromDevice(p string) bool {
	name, ok := strings.CutPrefix(path.Clean(p), "/dev/")
	return ok && !strings.Contains(name, "/") && cdromName.MatchString(name)
}

func (o ovfDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	var src *ovfSource
	if name, raw, ok := ovfSeedFile(env); ok {
		// cloud-init reads no network config from the seed directory.
		r, err := readOVFEnvironment(raw, false)
		if err != nil {
			return nil, fmt.Errorf("read OVF: %s/%s: %w", ovfSeedDir, name, err)
		}
		src = &ovfSource{where: ovfSeedDir + "/" + name, name: name, raw: raw, env: r}
	} else {
		var err error
		if src, err = ovfTransport(ctx, env); src == nil {
			if err == nil {
				err = errors.New("no OVF environment found")
			}
			return nil, fmt.Errorf("read OVF: %w", err)
		}
	}
	s, err := ovfSeed(ctx, env, src)
	if err != nil {
		return nil, fmt.Errorf("read OVF (%s): %w", src.where, err)
	}
	return s, nil
}

// ovfSeed maps an environment to a seed as cloud-init's OVF does, with
// NoCloud's merge for a seedfrom (the properties' meta-data wins, the
// seed's user-data replaces theirs). The documents a manifest covers
// are the properties' meta-data as OVFMetaDocument writes it, the
// user-data and the network config as decoded.
func ovfSeed(ctx context.Context, env *Env, src *ovfSource) (*seed.Seed, error) {
	r := src.env
	metaDoc, err := OVFMetaDocument(r.meta)
	if err != nil {
		return nil, err
	}
	d := &noCloudData{meta: map[string]any{}, defaultID: ovfDefaultInstanceID, found: []string{src.where}}
	meta := make(map[string]any, len(r.meta))
	for k, v := range r.meta {
		meta[k] = v
	}
	d.addMeta(meta, metaDoc)
	d.userData = r.userData
	d.networkConfig = r.network
	where := func(part string) string { return src.where + " (" + part + ")" }
	d.docs = seed.NoCloudDocuments(map[string][]byte{"meta-data": metaDoc, "user-data": r.userData, "network-config": r.network}, where, ovfDefaultInstanceID)
	if r.manifest != nil || r.signature != nil {
		d.manifests = append(d.manifests, seed.SignedManifest{Where: src.where + " (" + OVFManifestProperty + ")", Manifest: r.manifest, Signature: r.signature})
	}
	if sf, _ := r.meta["seedfrom"].(string); sf != "" {
		if err := d.readSeedFrom(ctx, env, sf); err != nil {
			return nil, fmt.Errorf("read seedfrom %s: %w", Redact(sf), err)
		}
		d.found = append(d.found, Redact(sf))
	}
	s, err := noCloudSeed(d)
	if err != nil {
		return nil, err
	}
	s.Datasource, s.Platform, s.CloudName = "OVF", "ovf", "ovf"
	s.Subplatform = "ovf (" + strings.Join(d.found, ",") + ")"
	if r.password != nil {
		pw, err := ovfPasswordConfig(*r.password)
		if err != nil {
			return nil, err
		}
		s.Config = map[string]any{"password": pw}
	}
	return s, nil
}

// OVFParts are the parts of an OVF environment a seed manifest lists, by
// role, as the OVF datasource reads them from a transport: the meta-data
// document (OVFMetaDocument), the user-data and the network config as
// decoded. seedinit seed build --kind ovf signs them.
func OVFParts(doc []byte) (map[string][]byte, error) {
	r, err := readOVFEnvironment(doc, true)
	if err != nil {
		return nil, fmt.Errorf("read the OVF environment: %w", err)
	}
	md, err := OVFMetaDocument(r.meta)
	if err != nil {
		return nil, err
	}
	parts := map[string][]byte{"meta-data": md}
	if r.userData != nil {
		parts["user-data"] = r.userData
	}
	if r.network != nil {
		parts["network-config"] = r.network
	}
	return parts, nil
}

// hashedPassword is cloud-init's pattern of a crypt hash.
var hashedPassword = regexp.MustCompile(`^\$(1|2a|2y|5|6)(\$.+){2}$`)

// ovfPasswordConfig is the password property as the config's password
// (cloud-init's set_passwords: the default user's, expired at the first
// login unless chpasswd says otherwise), hashed the moment it is read
// (SHA-512 crypt): it is kept with the seed and in the sensitive
// instance data, never in clear. A hash given is kept, and RANDOM asks
// for a random one as it does in the config.
func ovfPasswordConfig(pw string) (string, error) {
	if pw == "R" || pw == "RANDOM" || hashedPassword.MatchString(pw) {
		return pw, nil
	}
	h, err := shacrypt.HashPassword(pw, azureSaltRandom)
	if err != nil {
		return "", fmt.Errorf("hash the OVF password property: %w", err)
	}
	return h, nil
}

// OVFMetaDocument is the meta-data document of an OVF environment's
// meta-data properties (cloud-init's: instance-id, local-hostname, its
// alias hostname, public-keys, seedfrom), the document a manifest lists
// as meta-data: a JSON object of the values as the environment gives
// them, keys sorted, no spaces, nothing escaped that need not be (what
// Python's json.dumps(md, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False) writes), and a newline. NoCloud's reader reads it
// as the same meta-data.
func OVFMetaDocument(meta map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if meta == nil {
		meta = map[string]any{}
	}
	if err := enc.Encode(meta); err != nil {
		return nil, fmt.Errorf("write the OVF meta-data document: %w", err)
	}
	return b.Bytes(), nil
}

// ovfEnvironment is what cloud-init's read_ovf_environment takes from an
// OVF environment, and the signed seed's manifest.
type ovfEnvironment struct {
	// meta is cloud-init's md: seedfrom, local-hostname (hostname's
	// value too), public-keys, instance-id, as strings.
	meta map[string]any
	// userData is the user-data property base64-decoded, or as it is
	// when it is not base64; nil without the property.
	userData []byte
	// network is the network-config property base64-decoded, when it
	// is YAML with a network mapping (cloud-init takes that mapping).
	network []byte
	// password is the password property (cloud-init's config).
	password *string
	// manifest and signature are the seedinit.seed-manifest properties,
	// decoded.
	manifest, signature []byte
}

// errNoOVFProperties: an environment without a PropertySection (Azure's
// ovf-env.xml) is not this datasource's.
var errNoOVFProperties = errors.New("no PropertySection")

// maxOVFEnvironment bounds the document: vApp properties are a few
// kilobytes, user-data included.
const maxOVFEnvironment = 1 << 20

// readOVFEnvironment reads an OVF environment as cloud-init's
// read_ovf_environment does (get_properties: the root element named
// Environment, with children, the first PropertySection among them and
// its Property elements, each with the environment namespace's key and
// value, a key given twice keeping its last value in its first place).
// readNetwork is false for the seed directory, as in cloud-init. Errors
// never quote the document: it may hold a password.
func readOVFEnvironment(data []byte, readNetwork bool) (*ovfEnvironment, error) {
	if len(data) > maxOVFEnvironment {
		return nil, fmt.Errorf("%d bytes, more than %d", len(data), maxOVFEnvironment)
	}
	keys, values, err := ovfProperties(data)
	if err != nil {
		return nil, err
	}
	r := &ovfEnvironment{meta: map[string]any{}}
	for _, k := range keys {
		v := values[k]
		switch k {
		case "hostname", "local-hostname", "seedfrom", "public-keys", "instance-id":
			if k == "hostname" {
				k = "local-hostname"
			}
			r.meta[k] = v
		case "password":
			r.password = &v
		case "network-config":
			if readNetwork {
				r.network = ovfNetworkConfig(v)
			}
		case "user-data":
			if b, err := seed.DecodeBase64([]byte(v)); err == nil {
				r.userData = b
			} else {
				r.userData = []byte(v)
			}
		case OVFManifestProperty, OVFManifestSignatureProperty:
			b, err := seed.DecodeBase64([]byte(v))
			if err != nil {
				b = []byte(v) // refused by the check, which says why
			}
			if k == OVFManifestProperty {
				r.manifest = b
			} else {
				r.signature = b
			}
		}
	}
	return r, nil
}

// ovfNetworkConfig is the network-config property's document when
// cloud-init would take a network config from it: base64 of YAML whose
// network key holds a mapping. Otherwise none, as cloud-init ignores it.
func ovfNetworkConfig(v string) []byte {
	b, err := seed.DecodeBase64([]byte(v))
	if err != nil || len(b) == 0 {
		return nil
	}
	doc, err := yaml11.Load(b)
	if err != nil {
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if inner, ok := m["network"].(map[string]any); !ok || len(inner) == 0 {
		return nil
	}
	return b
}

// ovfProperties is get_properties: the keys in the order first given and
// each one's last value.
func ovfProperties(data []byte) ([]string, map[string]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(normalizeAttributeSpace(data)))
	var keys []string
	values := map[string]string{}
	depth := 0
	rootSeen, rootHasChild := false, false
	sections := 0
	inSection := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var syntax *xml.SyntaxError
			if errors.As(err, &syntax) {
				return nil, nil, fmt.Errorf("not well-formed XML (line %d)", syntax.Line)
			}
			return nil, nil, errors.New("not well-formed XML")
		}
		if depth >= 1 {
			switch tok.(type) {
			case xml.StartElement, xml.CharData, xml.Comment, xml.ProcInst:
				rootHasChild = true
			}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				if t.Name.Local != "Environment" {
					return nil, nil, fmt.Errorf("the root element is %q, not an OVF Environment", t.Name.Local)
				}
				rootSeen = true
			case depth == 2 && t.Name.Local == "PropertySection":
				sections++
				inSection = sections == 1
			case depth == 3 && inSection && t.Name.Local == "Property":
				var key, value *string
				for _, a := range t.Attr {
					if a.Name.Space != ovfEnvNamespace {
						continue
					}
					switch a.Name.Local {
					case "key":
						key = &a.Value
					case "value":
						value = &a.Value
					}
				}
				if key == nil || value == nil {
					return nil, nil, fmt.Errorf("a Property without the environment's key and value (property %d)", len(keys)+1)
				}
				if _, seen := values[*key]; !seen {
					keys = append(keys, *key)
				}
				values[*key] = *value
			}
		case xml.EndElement:
			if depth == 2 {
				inSection = false
			}
			depth--
		}
	}
	switch {
	case !rootSeen:
		return nil, nil, errors.New("no root element")
	case !rootHasChild:
		return nil, nil, errors.New("an Environment with nothing in it")
	case sections == 0:
		return nil, nil, errNoOVFProperties
	}
	return keys, values, nil
}

// normalizeAttributeSpace does what an XML parser must and Go's does not:
// a tab or line break in an attribute's value is a space (XML 1.0's
// attribute-value normalization; &#10; stays a line break). Line breaks
// (CR LF, CR) are made LF first, as everywhere in XML. Comments, CDATA,
// processing instructions and the DOCTYPE are left as they are.
func normalizeAttributeSpace(data []byte) []byte {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	data = bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
	out := bytes.Clone(data)
	skipTo := func(i int, end string) int {
		j := bytes.Index(data[i:], []byte(end))
		if j < 0 {
			return len(data)
		}
		return i + j + len(end)
	}
	for i := 0; i < len(data); {
		if data[i] != '<' {
			i++
			continue
		}
		rest := data[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			i = skipTo(i+4, "-->")
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			i = skipTo(i+9, "]]>")
		case bytes.HasPrefix(rest, []byte("<?")):
			i = skipTo(i+2, "?>")
		case bytes.HasPrefix(rest, []byte("<!")):
			// A DOCTYPE, its internal subset in brackets.
			depth := 0
			for i++; i < len(data); i++ {
				if data[i] == '[' {
					depth++
				} else if data[i] == ']' {
					depth--
				} else if data[i] == '>' && depth <= 0 {
					i++
					break
				}
			}
		default:
			var quote byte
			for i++; i < len(data); i++ {
				c := data[i]
				switch {
				case quote != 0 && c == quote:
					quote = 0
				case quote != 0 && (c == '\n' || c == '\t'):
					out[i] = ' '
				case quote == 0 && (c == '"' || c == '\''):
					quote = c
				case quote == 0 && c == '>':
					i++
					goto next
				}
			}
		next:
		}
	}
	return out
}
