package seed

// PartKind is what cloud-init's part handlers make of a user-data part.
type PartKind string

const (
	// KindCloudConfig is a #cloud-config (or text/cloud-config) document,
	// merged into the instance's config.
	KindCloudConfig PartKind = "cloud-config"
	// KindJSONPatch is #cloud-config-jsonp: an RFC 6902 patch over the
	// cloud-config merged so far.
	KindJSONPatch PartKind = "cloud-config-jsonp"
	// KindScript is a #! script (text/x-shellscript), run by scripts_user.
	KindScript PartKind = "script"
	// KindBoothook is #cloud-boothook: run at once, every boot, early.
	KindBoothook PartKind = "boothook"
	// KindPartHandler is #part-handler: Python code seedinit cannot run.
	KindPartHandler PartKind = "part-handler"
)

// Part is one decoded user-data part after includes, archives, MIME and
// compression have been unwrapped and templates rendered.
type Part struct {
	Kind PartKind
	// Filename is the name cloud-init gives the part (the MIME filename, or
	// part-001, part-002 ... in order), used for scripts' file names.
	Filename    string
	ContentType string
	Content     []byte
	// MergeHow is the part's Merge-Type / X-Merge-Type header, if any.
	MergeHow string
	// Frequency is set for scripts of text/x-shellscript-per-boot,
	// -per-instance and -per-once: "always", "once-per-instance", "once".
	// Empty means the usual per-instance user script.
	Frequency string
	// Source says where the part came from, for messages: "user-data part
	// 2 (text/cloud-config)", "#include http://... ".
	Source string
}

// Processed is decoded user-data (or vendor-data).
type Processed struct {
	Parts []Part
	// Warnings are problems that did not stop the rest: a part that could
	// not be fetched, an unknown content type, a #part-handler.
	Warnings []string
	// Refused are the includes NoIncludes refused: parts of the config a
	// policy left out, which a run reports as errors.
	Refused []string
}
