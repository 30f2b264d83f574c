package trust

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
)

// Where the trust anchor lives in the system seedinit runs from: the
// initramfs for PID 1 there, the root otherwise (`seedinit initramfs
// build --trust-key --trust-policy` bakes them).
const (
	PolicyFile = "/etc/seedinit/trust-policy"
	KeysFile   = "/etc/seedinit/trusted-seed-keys"
)

// Anchor is what a run trusts: the policy and the keys, and where they
// came from.
type Anchor struct {
	Policy Policy
	Keys   Keys
	// Where names the anchor in reports: "/etc/seedinit in the
	// initramfs", "--trust-keys keys.pub".
	Where string
	// Problems are what was wrong with it (a policy file that does not
	// parse, taken as require; no keys under a policy that needs them).
	Problems []string
}

// ReadAnchor reads the policy and keys from the system at dir (PolicyFile
// and KeysFile below it), never following a link out of it.
func ReadAnchor(dir, where string) Anchor {
	a := Anchor{Where: where}
	var problem string
	if a.Policy, problem = ReadPolicyFile(dir); problem != "" {
		a.Problems = append(a.Problems, problem)
	}
	if a.Keys, problem = ReadKeysFile(dir); problem != "" {
		a.Problems = append(a.Problems, problem)
	}
	return a
}

// ReadPolicyFile reads PolicyFile below dir: none is off, one that does
// not parse or cannot be read is require, with the problem said.
func ReadPolicyFile(dir string) (Policy, string) {
	b, err := readAnchorFile(dir, PolicyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Off, ""
	}
	if err != nil {
		return Require, fmt.Sprintf("read %s: %v; taken as require", PolicyFile, err)
	}
	p, err := ParsePolicy(string(b))
	if err != nil {
		return Require, fmt.Sprintf("%s: %v; taken as require", PolicyFile, err)
	}
	return p, ""
}

// ReadKeysFile reads KeysFile below dir: none is no key; a line that is
// not an Ed25519 key is a problem, and the keys before it are kept.
func ReadKeysFile(dir string) (Keys, string) {
	b, err := readAnchorFile(dir, KeysFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("read %s: %v", KeysFile, err)
	}
	keys, err := ParseKeys(b, KeysFile)
	if err != nil {
		return keys, err.Error()
	}
	return keys, ""
}

// maxAnchorFile caps an anchor file: thousands of keys.
const maxAnchorFile = 1 << 20

// readAnchorFile reads name (absolute, as the system sees it) in the
// system at dir, never through a link out of it.
func readAnchorFile(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Non-blocking: a FIFO in its place must not hold PID 1.
	f, err := root.OpenFile(strings.TrimPrefix(name, "/"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxAnchorFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAnchorFile {
		return nil, fmt.Errorf("more than %d bytes", maxAnchorFile)
	}
	return b, nil
}

// Raise makes the policy at least value (seedinit.trust= on the kernel
// command line, from): the command line can ask for more checking, never
// for less than the image was built with. A value that does not parse
// counts as require.
func (a *Anchor) Raise(value, from string) {
	if value == "" {
		return
	}
	p, err := ParsePolicy(value)
	if err != nil {
		a.Problems = append(a.Problems, fmt.Sprintf("%s: %v; taken as require", from, err))
		p = Require
	}
	a.Policy = max(a.Policy, p)
}

// Facts are what this machine is, for the bindings of a manifest.
type Facts struct {
	// SystemUUID is the SMBIOS system UUID, as NormalizeSystemUUID gives
	// it; "" when the machine has none.
	SystemUUID string
	// MACs are the machine's Ethernet addresses.
	MACs []string
	// Now is the time the window is judged at.
	Now time.Time
}

// ReadFacts reads the machine's facts from sysfs at sys ("/sys"): the
// system UUID (/sys/class/dmi/id/product_uuid) and the addresses of its
// network interfaces, the loopback aside.
func ReadFacts(sys string) Facts {
	f := Facts{Now: time.Now()}
	if b, err := os.ReadFile(filepath.Join(sys, "class/dmi/id/product_uuid")); err == nil {
		f.SystemUUID, _ = NormalizeSystemUUID(string(b))
	}
	links, _ := os.ReadDir(filepath.Join(sys, "class/net"))
	for _, l := range links {
		b, err := os.ReadFile(filepath.Join(sys, "class/net", l.Name(), "address"))
		if err != nil {
			continue
		}
		if mac, err := NormalizeMAC(string(b)); err == nil && mac != "00:00:00:00:00:00" && !slices.Contains(f.MACs, mac) {
			f.MACs = append(f.MACs, mac)
		}
	}
	sort.Strings(f.MACs)
	return f
}

// Verdicts of a part.
const (
	Trusted    = "trusted"
	NotApplied = "not applied"
	Unverified = "applied unverified"
)

// Finding is what the decision said of one part of the seed.
type Finding struct {
	Part    string `json:"part"`
	Verdict string `json:"verdict"`
	// Detail: the key that signed it, or why it is not trusted. Never
	// the part's content.
	Detail string `json:"detail"`
}

func (f Finding) String() string {
	if f.Verdict == Trusted {
		return fmt.Sprintf("%s: %s", f.Part, f.Detail)
	}
	return fmt.Sprintf("%s %s: %s", f.Part, f.Verdict, f.Detail)
}

// Decision is the one decision over a seed: what is applied and why. It
// is reported in status.json and kept with the seed for the final stage.
type Decision struct {
	Policy string `json:"policy"`
	Anchor string `json:"anchor,omitempty"`
	// Manifest is where the manifest that decided was served, SignedBy
	// its key's fingerprint; empty when none did.
	Manifest string    `json:"manifest,omitempty"`
	SignedBy string    `json:"signed_by,omitempty"`
	Parts    []Finding `json:"parts,omitempty"`
	// Problems are the anchor's, and each manifest not taken with why.
	Problems []string `json:"problems,omitempty"`
}

// Report turns the decision into what a run reports: parts left out as
// errors, parts applied unverified and the problems as warnings, each as
// "seed trust (POLICY): ...". Under require, an anchor without keys is an
// error too.
func (d *Decision) Report() (errs, warns []string) {
	if d == nil {
		return nil, nil
	}
	prefix := "seed trust (" + d.Policy + "): "
	for _, p := range d.Problems {
		warns = append(warns, prefix+p)
	}
	for _, f := range d.Parts {
		switch f.Verdict {
		case NotApplied:
			errs = append(errs, prefix+f.String())
		case Unverified:
			warns = append(warns, prefix+f.String())
		}
	}
	return errs, warns
}

// Refused says whether the decision left anything of the seed out.
func (d *Decision) Refused() bool {
	for _, f := range d.Parts {
		if f.Verdict == NotApplied {
			return true
		}
	}
	return false
}

// The parts a seed may have beyond PartNames, which no manifest covers.
const (
	partDatasourceConfig = "datasource config"
	partDatasourceFiles  = "datasource files"
)

// candidate is one manifest a source served, as far as it was checked.
type candidate struct {
	served   seed.SignedManifest
	manifest *Manifest
	signer   *sshkey.PublicKey
	cover    coverage
	index    int
}

// coverage is what of the served documents a manifest covers.
type coverage struct {
	docs map[string]*seed.Document
	// missing are the parts the manifest lists that no source served,
	// with why.
	missing map[string]string
}

// Decide is the one trust decision over s under anchor a on the machine
// facts f. It returns the seed to apply and the decision.
//
// Off checks nothing: s as it is. Otherwise each manifest the sources
// served is checked (a trusted key's signature, the window, the
// bindings), and of those that pass the one to go by is the newest
// (signed-at) among those whose every part a source served, else the
// newest. Under require the seed to apply is built anew from the
// documents that manifest covers, found by their digests among
// everything the sources served, and from nothing else: whichever
// source was merged or added, what it gave is applied only if it is
// byte for byte what was signed, in the role it was signed for. Without
// a covered meta-data document only the instance-id stays (the run
// needs one); the datasource's own config and files never pass. Under
// warn s is applied as it is, and each part that differs from what
// require would apply is reported.
func Decide(s *seed.Seed, a Anchor, f Facts) (*seed.Seed, *Decision) {
	d := &Decision{Policy: a.Policy.String(), Anchor: a.Where, Problems: slices.Clone(a.Problems)}
	if a.Policy == Off || s == nil {
		return s, d
	}
	if len(a.Keys) == 0 {
		d.Problems = append(d.Problems, fmt.Sprintf("no trusted keys (%s, in %s): no seed can be trusted", KeysFile, a.Where))
	}
	best := choose(s, a.Keys, f, d)
	if best != nil {
		d.Manifest, d.SignedBy = best.served.Where, sshkey.FingerprintSHA256(best.signer)
	}
	applied, why := build(s, best)
	signed := "signed by " + d.SignedBy
	for _, part := range append(slices.Clone(seed.PartNames), partDatasourceConfig, partDatasourceFiles) {
		had, have := present(s, part), present(applied, part)
		if !had && !have && why[part] == "" {
			continue
		}
		fd := Finding{Part: part}
		switch {
		case a.Policy == Require && have:
			fd.Verdict, fd.Detail = Trusted, signed
			if other := differences(s, applied, part); other != "" && had {
				fd.Detail += "; left out: " + other
			}
		case a.Policy == Require:
			fd.Verdict, fd.Detail = NotApplied, why[part]
			if part == "meta-data" {
				fd.Detail += "; only the instance-id is kept"
			}
		case !had:
			continue // warn applies s, which lacks it
		case have && same(s, applied, part):
			fd.Verdict, fd.Detail = Trusted, signed
		case have:
			fd.Verdict, fd.Detail = Unverified, "not what the manifest covers: "+differences(s, applied, part)
		default:
			fd.Verdict, fd.Detail = Unverified, why[part]
		}
		d.Parts = append(d.Parts, fd)
	}
	d.Parts = append(d.Parts, fileFindings(s, best, a.Policy, signed)...)
	if fd, ok := bootstrapFinding(s, applied, best, a.Policy, signed); ok {
		d.Parts = append(d.Parts, fd)
	}
	if a.Policy == Require {
		return applied, d
	}
	return s, d
}

// fileFindings says, for each file the seed injects, whether the
// manifest covers it (its path listed with the digest of what was
// served), and names each file the manifest lists that no source served.
func fileFindings(s *seed.Seed, best *candidate, policy Policy, signed string) []Finding {
	var out []Finding
	served := map[string]bool{}
	for _, f := range s.Files {
		served[f.Path] = true
		fd := Finding{Part: "file " + f.Path}
		if why := fileNotCovered(s, best, f); why == "" {
			fd.Verdict, fd.Detail = Trusted, signed
		} else if policy == Require {
			fd.Verdict, fd.Detail = NotApplied, why
		} else {
			fd.Verdict, fd.Detail = Unverified, why
		}
		out = append(out, fd)
	}
	if best == nil || policy != Require {
		return out
	}
	var missing []string
	for p := range best.manifest.Files {
		if !served[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		out = append(out, Finding{Part: "file " + p, Verdict: NotApplied, Detail: "the manifest lists it, and no source served it"})
	}
	return out
}

// bootstrapFinding says whether the manifest covers the bootstrap tree:
// one finding for the tree, naming the files left out (and the reason
// of the first), or listed and not served. applied is what require
// applies.
func bootstrapFinding(s, applied *seed.Seed, best *candidate, policy Policy, signed string) (Finding, bool) {
	fd := Finding{Part: "bootstrap tree"}
	var left []string
	why := ""
	served := map[string]bool{}
	files := 0
	for _, f := range s.Bootstrap {
		if f.Dir {
			continue
		}
		files++
		served[f.Path] = true
		if w := bootstrapNotCovered(s, best, f); w != "" {
			left = append(left, f.Path)
			if why == "" {
				why = w
			}
		}
	}
	var missing []string
	if best != nil && policy == Require {
		for p := range best.manifest.Bootstrap {
			if !served[p] {
				missing = append(missing, p)
			}
		}
		sort.Strings(missing)
	}
	if files == 0 && len(missing) == 0 {
		return fd, false
	}
	var detail []string
	if len(left) > 0 {
		detail = append(detail, fmt.Sprintf("%s (%s)", clipList(left), why))
	}
	if len(missing) > 0 {
		detail = append(detail, fmt.Sprintf("the manifest lists %s, and no source served it", clipList(missing)))
	}
	switch {
	case len(detail) == 0:
		fd.Verdict, fd.Detail = Trusted, fmt.Sprintf("%d files, %s", files, signed)
	case policy == Require:
		fd.Verdict, fd.Detail = NotApplied, strings.Join(detail, "; ")
		if n := len(applied.Bootstrap); n > 0 {
			fd.Detail += fmt.Sprintf("; the %d covered ones are applied", countFiles(applied.Bootstrap))
		}
	default:
		fd.Verdict, fd.Detail = Unverified, strings.Join(detail, "; ")
	}
	return fd, true
}

func countFiles(t []seed.BootstrapFile) int {
	n := 0
	for _, f := range t {
		if !f.Dir {
			n++
		}
	}
	return n
}

// clipList names paths, the first few of many.
func clipList(paths []string) string {
	const most = 5
	if len(paths) <= most {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:most], ", "), len(paths)-most)
}

// bootstrapNotCovered says why best does not cover a bootstrap file, ""
// when it does.
func bootstrapNotCovered(s *seed.Seed, best *candidate, f seed.BootstrapFile) string {
	switch {
	case best == nil && len(s.Manifests) > 0:
		return "no trusted seed manifest (see the problems)"
	case best == nil:
		return "no seed manifest (" + seed.ManifestFile + ") was served"
	}
	bf, listed := best.manifest.Bootstrap[f.Path]
	switch {
	case !listed:
		return "not in the manifest"
	case sha256.Sum256(f.Content) != bf.Digest:
		return fmt.Sprintf("the file served (%s) is not the signed one", f.Where)
	}
	return ""
}

// fileNotCovered says why best does not cover f, "" when it does.
func fileNotCovered(s *seed.Seed, best *candidate, f seed.InjectedFile) string {
	switch {
	case best == nil && len(s.Manifests) > 0:
		return "no trusted seed manifest (see the problems)"
	case best == nil:
		return "no seed manifest (" + seed.ManifestFile + ") was served"
	}
	digest, listed := best.manifest.Files[f.Path]
	switch {
	case !listed:
		return "not in the manifest"
	case sha256.Sum256(f.Content) != digest:
		return fmt.Sprintf("the file served (%s) is not the signed one: the manifest lists %s", f.Where, shortDigest(digest))
	}
	return ""
}

// choose checks each served manifest and returns the one to go by, nil
// when none passes; why each failed goes to d's problems.
func choose(s *seed.Seed, keys Keys, f Facts, d *Decision) *candidate {
	var ok []*candidate
	for i, sm := range s.Manifests {
		c := &candidate{served: sm, index: i}
		if err := c.check(s, keys, f); err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("manifest %s not taken: %v", sm.Where, err))
			continue
		}
		ok = append(ok, c)
	}
	if len(ok) == 0 {
		return nil
	}
	sort.SliceStable(ok, func(i, j int) bool {
		ci, cj := ok[i], ok[j]
		if (len(ci.cover.missing) == 0) != (len(cj.cover.missing) == 0) {
			return len(ci.cover.missing) == 0
		}
		if !ci.manifest.SignedAt.Equal(cj.manifest.SignedAt) {
			return ci.manifest.SignedAt.After(cj.manifest.SignedAt)
		}
		return ci.index > cj.index
	})
	for _, c := range ok[1:] {
		d.Problems = append(d.Problems, fmt.Sprintf("manifest %s not taken: %s is newer or more complete", c.served.Where, ok[0].served.Where))
	}
	return ok[0]
}

// check verifies the manifest's signature, parses it, and checks its
// window and bindings against the machine.
func (c *candidate) check(s *seed.Seed, keys Keys, f Facts) error {
	if c.served.Manifest == nil {
		return fmt.Errorf("%s without %s", seed.ManifestSignatureFile, seed.ManifestFile)
	}
	if c.served.Signature == nil {
		return fmt.Errorf("unsigned (no %s beside it)", seed.ManifestSignatureFile)
	}
	signer, err := keys.Verify(c.served.Manifest, c.served.Signature)
	if err != nil {
		return err
	}
	m, err := ParseManifest(c.served.Manifest)
	if err != nil {
		return fmt.Errorf("signed by %s but unreadable: %w", sshkey.FingerprintSHA256(signer), err)
	}
	c.signer, c.manifest = signer, m
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	const day = "2006-01-02 15:04:05 UTC"
	if !m.NotBefore.IsZero() && now.Before(m.NotBefore) {
		return fmt.Errorf("not valid before %s (this machine's clock says %s)", m.NotBefore.UTC().Format(day), now.UTC().Format(day))
	}
	if !m.NotAfter.IsZero() && now.After(m.NotAfter) {
		return fmt.Errorf("expired at %s (this machine's clock says %s)", m.NotAfter.UTC().Format(day), now.UTC().Format(day))
	}
	if len(m.SystemUUIDs) > 0 && !slices.Contains(m.SystemUUIDs, f.SystemUUID) {
		this := f.SystemUUID
		if this == "" {
			this = "none"
		}
		return fmt.Errorf("for system-uuid %s, not this machine's (%s)", strings.Join(m.SystemUUIDs, ", "), this)
	}
	if len(m.MACs) > 0 && !slices.ContainsFunc(m.MACs, func(mac string) bool { return slices.Contains(f.MACs, mac) }) {
		return fmt.Errorf("for mac %s, which this machine does not have", strings.Join(m.MACs, ", "))
	}
	c.cover = cover(s, m)
	if len(m.InstanceIDs) > 0 {
		id := s.InstanceID
		if md := c.cover.docs["meta-data"]; md != nil {
			id = md.Meta.InstanceID
		}
		if !slices.Contains(m.InstanceIDs, id) {
			return fmt.Errorf("for instance-id %s, not this instance (%s)", strings.Join(m.InstanceIDs, ", "), id)
		}
	}
	return nil
}

// cover finds, for each part m lists, a document a source served with
// that digest in that role.
func cover(s *seed.Seed, m *Manifest) coverage {
	c := coverage{docs: map[string]*seed.Document{}, missing: map[string]string{}}
	for part, digest := range m.Parts {
		var unreadable, other string
		for i := range s.Documents {
			doc := &s.Documents[i]
			if doc.Part != part {
				continue
			}
			if sha256.Sum256(doc.Content) != digest {
				other = doc.Where
				continue
			}
			if part == "meta-data" && doc.Meta == nil {
				unreadable = fmt.Sprintf("the signed meta-data (%s) is unreadable: %s", doc.Where, doc.MetaErr)
				continue
			}
			c.docs[part] = doc
			break
		}
		switch {
		case c.docs[part] != nil:
		case unreadable != "":
			c.missing[part] = unreadable
		case other != "":
			c.missing[part] = fmt.Sprintf("the %s served (%s) is not the signed one: the manifest lists %s, which no source served", part, other, shortDigest(digest))
		default:
			c.missing[part] = fmt.Sprintf("the manifest lists %s %s, and no source served it", part, shortDigest(digest))
		}
	}
	for p, digest := range m.Files {
		if !slices.ContainsFunc(s.Files, func(f seed.InjectedFile) bool { return f.Path == p && sha256.Sum256(f.Content) == digest }) {
			c.missing["file "+p] = "the manifest lists it, and no source served it"
		}
	}
	for p, bf := range m.Bootstrap {
		if !slices.ContainsFunc(s.Bootstrap, func(f seed.BootstrapFile) bool { return f.Path == p && sha256.Sum256(f.Content) == bf.Digest }) {
			c.missing["bootstrap "+p] = "the manifest lists it, and no source served it"
		}
	}
	return c
}

// build makes the seed require applies: the documents best covers, and
// of s only what names the source. why says, by part, why a part is not
// in it.
func build(s *seed.Seed, best *candidate) (*seed.Seed, map[string]string) {
	out := &seed.Seed{Datasource: s.Datasource, Subplatform: s.Subplatform, Platform: s.Platform, CloudName: s.CloudName}
	why := map[string]string{}
	if present(s, partDatasourceConfig) {
		why[partDatasourceConfig] = "a datasource's own config is no part of a seed manifest"
	}
	if present(s, partDatasourceFiles) {
		why[partDatasourceFiles] = "a datasource's own files are no part of a seed manifest"
	}
	var docs map[string]*seed.Document
	for _, part := range seed.PartNames {
		switch {
		case best == nil && len(s.Manifests) > 0:
			why[part] = "no trusted seed manifest (see the problems)"
		case best == nil:
			why[part] = "no seed manifest (" + seed.ManifestFile + ") was served"
		default:
			docs = best.cover.docs
			if _, listed := best.manifest.Parts[part]; !listed {
				why[part] = "not in the manifest"
			} else if docs[part] == nil {
				why[part] = best.cover.missing[part]
				continue // reported whether or not the seed has the part
			}
		}
		if !present(s, part) {
			delete(why, part)
		}
	}
	if md := docs["meta-data"]; md != nil {
		out.SetMeta(cloneMeta(*md.Meta))
		out.MetaRaw = md.Content
		if len(md.Meta.NetworkConfig) > 0 {
			out.NetworkConfig, out.NetworkFormat = md.Meta.NetworkConfig, md.Meta.NetworkFormat
		}
	} else {
		out.InstanceID = s.InstanceID
		out.Metadata = map[string]any{"instance-id": s.InstanceID}
	}
	if doc := docs["user-data"]; doc != nil {
		out.UserData = doc.Content
	}
	if doc := docs["vendor-data"]; doc != nil {
		out.VendorData = doc.Content
	}
	if doc := docs["network-config"]; doc != nil {
		out.NetworkConfig, out.NetworkFormat = doc.Content, doc.Format
	}
	for _, f := range s.Files {
		if fileNotCovered(s, best, f) == "" {
			out.Files = append(out.Files, f)
		}
	}
	// The covered files of the bootstrap tree, with the mode and owner
	// the manifest gives them, not the medium's; their directories are
	// made as the bootstrap module makes missing ones.
	for _, f := range s.Bootstrap {
		if f.Dir || bootstrapNotCovered(s, best, f) != "" {
			continue
		}
		bf := best.manifest.Bootstrap[f.Path]
		f.Mode, f.UID, f.GID = bf.Mode, bf.UID, bf.GID
		out.Bootstrap = append(out.Bootstrap, f)
	}
	return out, why
}

// present says whether s has part.
func present(s *seed.Seed, part string) bool {
	switch part {
	case "meta-data":
		// Every seed has an instance-id; the rest is what a manifest
		// must cover.
		return s.MetaRaw != nil || s.LocalHostname != "" || len(s.PublicKeys) > 0 || s.Region != "" ||
			s.AvailabilityZone != "" || len(s.Metadata) > 1 || len(s.Metadata) == 1 && s.Metadata["instance-id"] == nil
	case "network-config":
		return len(s.NetworkConfig) > 0
	case partDatasourceConfig:
		return len(s.Config) > 0
	case partDatasourceFiles:
		return len(s.Keep) > 0
	}
	return s.PartContent(part) != nil
}

// same says whether a and b have part alike.
func same(a, b *seed.Seed, part string) bool {
	switch part {
	case "meta-data":
		return a.InstanceID == b.InstanceID && a.LocalHostname == b.LocalHostname && a.Region == b.Region &&
			a.AvailabilityZone == b.AvailabilityZone && slices.Equal(a.PublicKeys, b.PublicKeys) &&
			reflect.DeepEqual(a.Metadata, b.Metadata)
	case "network-config":
		return string(a.NetworkConfig) == string(b.NetworkConfig) && a.NetworkFormat == b.NetworkFormat
	}
	return string(a.PartContent(part)) == string(b.PartContent(part))
}

// differences names what of a's part b does not have alike: the
// meta-data keys, or that the part is another. Names only, never values.
func differences(a, b *seed.Seed, part string) string {
	if same(a, b, part) {
		return ""
	}
	if part != "meta-data" {
		return "the " + part + " the datasource chose is another"
	}
	var keys []string
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || !reflect.DeepEqual(v, w) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "the meta-data the datasource merged"
	}
	return "meta-data keys " + strings.Join(keys, ", ")
}

// cloneMeta copies m's tree, so that what the run does with the seed's
// metadata cannot change the document it was read from.
func cloneMeta(m seed.Meta) seed.Meta {
	m.Metadata, _ = cloneValue(m.Metadata).(map[string]any)
	m.PublicKeys = slices.Clone(m.PublicKeys)
	return m
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, e := range t {
			c[k] = cloneValue(e)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}
