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
	// NetworkConfig is the raw network configuration and NetworkFormat its
	// kind: "v1", "v2" (cloud-init YAML), "network_data.json", "eni", "".
	NetworkConfig []byte
	NetworkFormat string

	// MetaRaw is the meta-data as served, when the source has it as one
	// document (NoCloud's meta-data file), for its signature.
	MetaRaw []byte
	// Signatures are the signatures the source served beside the parts,
	// by part name (PartNames; seed/trust checks them).
	Signatures map[string][]byte
}

// PartNames are a seed's parts as a NoCloud seed names its files, the
// ones signed and measured, in the order they are checked and measured.
var PartNames = []string{"meta-data", "user-data", "vendor-data", "network-config"}

// SignatureFile names the signature served beside the file name: the
// same name with .sig after it.
func SignatureFile(name string) string { return name + ".sig" }

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

// KeptFile is a file a datasource leaves in the target.
type KeptFile struct {
	Path    string
	Data    []byte
	Mode    uint32 // the file's permissions
	DirMode uint32 // for directories that must be made
}
