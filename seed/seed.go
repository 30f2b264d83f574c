// Package seed finds and reads what the cloud hands an instance: metadata,
// user-data, vendor-data and network config. It decodes user-data into parts
// (cloud-configs, scripts, boothooks) with cloud-init's rules. It never
// changes the system: datasources return data and the caller applies it.
package seed

// Seed is one instance's data, as a datasource found it.
type Seed struct {
	// Datasource is cloud-init's name for the source ("NoCloud",
	// "ConfigDrive", "OpenStack", "Ec2" ...), shown by status and query.
	Datasource string
	// Subplatform says where exactly it came from: "seed-dir (/path)",
	// "config-disk (/dev/sr0)", "metadata (http://...)".
	Subplatform string
	// Platform and CloudName are cloud-init's v1.platform and v1.cloud_name.
	Platform  string
	CloudName string

	InstanceID       string
	LocalHostname    string
	Region           string
	AvailabilityZone string
	PublicKeys       []string
	// Metadata is the datasource's metadata tree as it came (ds.meta_data).
	Metadata map[string]any

	UserData   []byte
	VendorData []byte
	// Config is the datasource's own cloud-config, cloud-init's
	// get_config_obj: Azure's admin user and password hash from
	// ovf-env.xml, CloudStack's password. It merges under vendor-data
	// and user-data and over /etc/cloud's config. Passwords in it are
	// hashed where the cloud allows: it is saved with the seed.
	Config map[string]any
	// Keep are files the datasource leaves in the target for later boots
	// and other agents, as cloud-init's datasources write them (Azure's
	// ovf-env.xml, password redacted, for when the provisioning disc is
	// gone). The stages write them; secrets are out before they get here.
	Keep []KeptFile
	// Files are files the seed's publisher injects into the target,
	// written at their paths once per instance (OpenStack's "files" in
	// meta_data.json, personality files): content of the seed like the
	// user-data, which a manifest covers by path and digest.
	Files []InjectedFile
	// Bootstrap is a tree the seed medium carries for the image's own
	// first-boot agent (bootstrap/ on a cidata or config-2 disk: a
	// vendor's config/, license/, content/), copied unchanged below the
	// directory the image names, once per instance.
	Bootstrap []BootstrapFile
	// NetworkConfig is the raw network configuration and NetworkFormat its
	// kind: "v1", "v2" (cloud-init YAML), "network_data.json", "eni", "".
	NetworkConfig []byte
	NetworkFormat string

	// MetaRaw is the meta-data document the applied meta-data is, as
	// served, when it is one document (NoCloud's meta-data file); nil when
	// the meta-data was merged from several sources or built from many
	// URLs. It is what the TPM measures as meta-data.
	MetaRaw []byte

	// Documents are the parts as each source served them, and Manifests
	// the signed seed manifests served beside them: what seed/trust
	// decides on. Datasources add them; the decision builds the seed it
	// lets through from them alone.
	Documents []Document
	Manifests []SignedManifest
}

// PartNames are a seed's parts as a NoCloud seed names its files, the
// ones a manifest covers and the TPM measures, in the order they are
// checked and measured.
var PartNames = []string{"meta-data", "user-data", "vendor-data", "network-config"}

// ReportURLKey is the meta-data key of the URL seedinit reports its
// status to after the final stage (apply/stages' report.go), which
// `seedinit serve --report-url` gives each instance it serves.
const ReportURLKey = "seedinit-report-url"

// The seed manifest and its signature, beside the parts wherever a seed's
// publisher can put files (seed/trust reads them).
const (
	ManifestFile          = "seed-manifest"
	ManifestSignatureFile = "seed-manifest.sig"
)

// PartContent is the content of the part name as it will be applied (the
// meta-data document as served), nil when s has none.
func (s *Seed) PartContent(name string) []byte {
	switch name {
	case "meta-data":
		return s.MetaRaw
	case "user-data":
		return s.UserData
	case "vendor-data":
		return s.VendorData
	case "network-config":
		return s.NetworkConfig
	}
	return nil
}

// Document is one part as a source served it.
type Document struct {
	// Part is the role the source gave it: one of PartNames.
	Part string
	// Where names the file or URL it was read from, for messages.
	Where string
	// Content is the part's bytes as served.
	Content []byte
	// Meta is what a meta-data document says on its own, read as its
	// datasource reads it; nil for other parts, and for a meta-data
	// document its datasource could not read (MetaErr says why).
	Meta    *Meta
	MetaErr string
	// Format is a network-config document's format, as the datasource
	// reads it ("v1", "v2", "network_data.json", ...).
	Format string
}

// SignedManifest is a seed manifest and its signature as a source served
// them; seed/trust parses and verifies them.
type SignedManifest struct {
	Where     string
	Manifest  []byte
	Signature []byte
}

// AddDocument notes a part a source served.
func (s *Seed) AddDocument(d Document) { s.Documents = append(s.Documents, d) }

// Meta is what meta-data says of the instance: the tree and the fields a
// datasource takes from it.
type Meta struct {
	Metadata         map[string]any
	InstanceID       string
	LocalHostname    string
	Region           string
	AvailabilityZone string
	PublicKeys       []string
	// CloudName is the cloud the meta-data names ("" keeps the
	// datasource's own).
	CloudName string
	// NetworkConfig is network configuration the meta-data itself holds
	// (NoCloud's network-interfaces), with its format.
	NetworkConfig []byte
	NetworkFormat string
}

// SetMeta makes m the seed's meta-data.
func (s *Seed) SetMeta(m Meta) {
	s.Metadata = m.Metadata
	s.InstanceID, s.LocalHostname = m.InstanceID, m.LocalHostname
	s.Region, s.AvailabilityZone = m.Region, m.AvailabilityZone
	s.PublicKeys = m.PublicKeys
	if m.CloudName != "" {
		s.CloudName = m.CloudName
	}
}

// InjectedFile is a file the seed hands the target.
type InjectedFile struct {
	// Path is where it goes, absolute in the target.
	Path string
	// Content is its bytes as served.
	Content []byte
	// Where names the file or URL it was read from, for messages.
	Where string
}

// BootstrapFile is one file or directory of a bootstrap tree.
type BootstrapFile struct {
	// Path is slash-separated, clean, relative to the tree.
	Path string
	Dir  bool
	// Content is a file's bytes as the medium holds them.
	Content []byte
	// Mode is the permission bits the medium gives (0644 and 0755 when it
	// gives none, as FAT); UID and GID its owner, -1 for none (root's).
	Mode     uint32
	UID, GID int
	// Where names the medium, for messages.
	Where string
}

// KeptFile is a file a datasource leaves in the target.
type KeptFile struct {
	Path    string
	Data    []byte
	Mode    uint32 // the file's permissions
	DirMode uint32 // for directories that must be made
}
