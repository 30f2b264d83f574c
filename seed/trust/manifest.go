package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/seedinit/seedinit/seed"
)

// A seed manifest is the one document a seed's publisher signs. It lists
// each part by its role and the SHA-256 of its bytes as served, and may
// bind the seed to instances and to a window of time:
//
//	seedinit-seed-manifest 1
//	signed-at 2026-11-28T07:00:00Z
//	part meta-data sha256:<64 hex digits>
//	part user-data sha256:<64 hex digits>
//	file /etc/fortinet/license.lic sha256:<64 hex digits>
//	bootstrap config/init-cfg.txt 0644 0 0 sha256:<64 hex digits>
//	system-uuid 4c4c4544-0042-3510-8052-b3c04f4d4e32
//	mac 52:54:00:12:34:56
//	instance-id iid-waf-0001
//	not-before 2026-11-28T00:00:00Z
//	not-after 2026-12-28T00:00:00Z
//
// One field a line, "NAME VALUE", in this order of kinds or any other;
// parts at most once each; files (content the seed writes into the
// target at a path: OpenStack's injected files) at most once per path,
// the path absolute and clean, spaces allowed, the digest last; at least
// one part or file; signed-at once; the bindings
// (system-uuid, mac, instance-id) as often as there are instances the
// seed is for, any of which may take it; the window's ends at most once.
// A line the parser does not know is an error, never skipped: a field a
// signer added to restrict the seed must not be passed over by an older
// reader that would then accept what the signer meant to refuse (X.509's
// critical extensions, TUF's strict metadata). `seedinit seed sign`
// writes it; `sha256sum` checks its digests and `ssh-keygen -Y verify
// -n seedinit-seed-manifest` its signature.
const manifestHeader = "seedinit-seed-manifest 1"

// maxManifest caps a manifest: a few hundred bytes in practice, a few
// thousand bindings at most.
const maxManifest = 256 << 10

// Manifest is a parsed seed manifest.
type Manifest struct {
	SignedAt time.Time
	// Parts are the digests of the parts the seed applies, by role.
	Parts map[string][sha256.Size]byte
	// Files are the digests of the files the seed writes into the
	// target, by their path there.
	Files map[string][sha256.Size]byte
	// Bootstrap are the bootstrap tree's files, by their path in the
	// tree: each one's digest and the mode and owner it is given.
	Bootstrap map[string]BootstrapFile
	// The instances the seed is for: each kind given must match this
	// machine by one of its values; a kind not given binds nothing.
	SystemUUIDs []string
	MACs        []string
	InstanceIDs []string
	// NotBefore and NotAfter bound when the seed may be applied; zero is
	// open.
	NotBefore, NotAfter time.Time
}

// BootstrapFile is what a manifest says of a bootstrap tree's file.
type BootstrapFile struct {
	Digest   [sha256.Size]byte
	Mode     uint32
	UID, GID int
}

// Digest is the SHA-256 a manifest lists for content.
func Digest(content []byte) [sha256.Size]byte { return sha256.Sum256(content) }

func formatDigest(d [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

// shortDigest names a digest in messages.
func shortDigest(d [sha256.Size]byte) string { return formatDigest(d)[:19] + "…" }

// Marshal writes m in the manifest's text form, in a fixed order, so the
// same seed and bindings give the same bytes.
func (m *Manifest) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(manifestHeader + "\n")
	fmt.Fprintf(&b, "signed-at %s\n", m.SignedAt.UTC().Format(time.RFC3339))
	for _, part := range seed.PartNames {
		if d, ok := m.Parts[part]; ok {
			fmt.Fprintf(&b, "part %s %s\n", part, formatDigest(d))
		}
	}
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(&b, "file %s %s\n", p, formatDigest(m.Files[p]))
	}
	paths = paths[:0]
	for p := range m.Bootstrap {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f := m.Bootstrap[p]
		fmt.Fprintf(&b, "bootstrap %s %04o %d %d %s\n", p, f.Mode, f.UID, f.GID, formatDigest(f.Digest))
	}
	for _, u := range m.SystemUUIDs {
		fmt.Fprintf(&b, "system-uuid %s\n", u)
	}
	for _, mac := range m.MACs {
		fmt.Fprintf(&b, "mac %s\n", mac)
	}
	for _, id := range m.InstanceIDs {
		fmt.Fprintf(&b, "instance-id %s\n", id)
	}
	if !m.NotBefore.IsZero() {
		fmt.Fprintf(&b, "not-before %s\n", m.NotBefore.UTC().Format(time.RFC3339))
	}
	if !m.NotAfter.IsZero() {
		fmt.Fprintf(&b, "not-after %s\n", m.NotAfter.UTC().Format(time.RFC3339))
	}
	return b.Bytes()
}

// ParseManifest reads a manifest; an error names the line.
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > maxManifest {
		return nil, fmt.Errorf("%d bytes: more than a manifest's %d", len(b), maxManifest)
	}
	text, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return nil, errors.New("no newline at its end")
	}
	lines := strings.Split(text, "\n")
	if lines[0] != manifestHeader {
		return nil, fmt.Errorf("line 1: %q, want %q", clip(lines[0]), manifestHeader)
	}
	m := &Manifest{Parts: map[string][sha256.Size]byte{}, Files: map[string][sha256.Size]byte{}, Bootstrap: map[string]BootstrapFile{}}
	seen := map[string]bool{}
	for i, line := range lines[1:] {
		n := i + 2
		name, value, ok := strings.Cut(line, " ")
		if !ok || value == "" || strings.TrimSpace(value) != value || strings.IndexFunc(line, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("line %d: %q: want NAME VALUE", n, clip(line))
		}
		var err error
		switch name {
		case "signed-at", "not-before", "not-after":
			if seen[name] {
				return nil, fmt.Errorf("line %d: %s given twice", n, name)
			}
			seen[name] = true
			var t time.Time
			if t, err = time.Parse(time.RFC3339, value); err != nil {
				return nil, fmt.Errorf("line %d: %s %q: want a time as 2006-01-02T15:04:05Z", n, name, clip(value))
			}
			switch name {
			case "signed-at":
				m.SignedAt = t
			case "not-before":
				m.NotBefore = t
			default:
				m.NotAfter = t
			}
		case "part":
			part, digest, _ := strings.Cut(value, " ")
			if !slices.Contains(seed.PartNames, part) {
				return nil, fmt.Errorf("line %d: part %q: want one of %s", n, clip(part), strings.Join(seed.PartNames, ", "))
			}
			if _, dup := m.Parts[part]; dup {
				return nil, fmt.Errorf("line %d: part %s given twice", n, part)
			}
			d, err := parseDigest(digest)
			if err != nil {
				return nil, fmt.Errorf("line %d: part %s: %w", n, part, err)
			}
			m.Parts[part] = d
		case "file":
			i := strings.LastIndexByte(value, ' ')
			if i < 0 {
				return nil, fmt.Errorf("line %d: file %q: want a path and a digest", n, clip(value))
			}
			p, digest := value[:i], value[i+1:]
			if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
				return nil, fmt.Errorf("line %d: file %q: want an absolute, clean path", n, clip(p))
			}
			if _, dup := m.Files[p]; dup {
				return nil, fmt.Errorf("line %d: file %s given twice", n, clip(p))
			}
			d, err := parseDigest(digest)
			if err != nil {
				return nil, fmt.Errorf("line %d: file %s: %w", n, clip(p), err)
			}
			m.Files[p] = d
		case "bootstrap":
			f := strings.Split(value, " ")
			if len(f) < 5 {
				return nil, fmt.Errorf("line %d: bootstrap %q: want a path, a mode, an owner, a group and a digest", n, clip(value))
			}
			p := strings.Join(f[:len(f)-4], " ")
			if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
				return nil, fmt.Errorf("line %d: bootstrap %q: want a relative, clean path", n, clip(p))
			}
			if _, dup := m.Bootstrap[p]; dup {
				return nil, fmt.Errorf("line %d: bootstrap %s given twice", n, clip(p))
			}
			var bf BootstrapFile
			mode, err := strconv.ParseUint(f[len(f)-4], 8, 32)
			if err != nil || mode > 0o777 || len(f[len(f)-4]) != 4 {
				return nil, fmt.Errorf("line %d: bootstrap %s: mode %q: want four octal digits, at most 0777", n, clip(p), clip(f[len(f)-4]))
			}
			bf.Mode = uint32(mode)
			for i, id := range []*int{&bf.UID, &bf.GID} {
				v, err := strconv.ParseUint(f[len(f)-3+i], 10, 31)
				if err != nil || strconv.FormatUint(v, 10) != f[len(f)-3+i] {
					return nil, fmt.Errorf("line %d: bootstrap %s: owner %q: want a number", n, clip(p), clip(f[len(f)-3+i]))
				}
				*id = int(v)
			}
			if bf.Digest, err = parseDigest(f[len(f)-1]); err != nil {
				return nil, fmt.Errorf("line %d: bootstrap %s: %w", n, clip(p), err)
			}
			m.Bootstrap[p] = bf
		case "system-uuid":
			u, err := NormalizeSystemUUID(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			m.SystemUUIDs = append(m.SystemUUIDs, u)
		case "mac":
			mac, err := NormalizeMAC(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			m.MACs = append(m.MACs, mac)
		case "instance-id":
			m.InstanceIDs = append(m.InstanceIDs, value)
		default:
			return nil, fmt.Errorf("line %d: unknown field %q (a field that may restrict the seed is never skipped)", n, clip(name))
		}
	}
	if !seen["signed-at"] {
		return nil, errors.New("no signed-at")
	}
	if len(m.Parts)+len(m.Files)+len(m.Bootstrap) == 0 {
		return nil, errors.New("lists no part")
	}
	if !m.NotBefore.IsZero() && !m.NotAfter.IsZero() && m.NotAfter.Before(m.NotBefore) {
		return nil, fmt.Errorf("not-after %s is before not-before %s", m.NotAfter.Format(time.RFC3339), m.NotBefore.Format(time.RFC3339))
	}
	return m, nil
}

func parseDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return d, fmt.Errorf("digest %q: want sha256: and 64 lower-case hex digits", clip(s))
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("digest %q: want sha256: and 64 lower-case hex digits", clip(s))
	}
	return d, nil
}

// NormalizeSystemUUID is an SMBIOS system UUID as Linux shows it in
// /sys/class/dmi/id/product_uuid: 36 characters, lower case.
func NormalizeSystemUUID(s string) (string, error) {
	u := strings.ToLower(strings.TrimSpace(s))
	if len(u) != 36 || strings.Count(u, "-") != 4 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' {
		return "", fmt.Errorf("system-uuid %q: want 8-4-4-4-12 hex digits", clip(s))
	}
	if _, err := hex.DecodeString(strings.ReplaceAll(u, "-", "")); err != nil {
		return "", fmt.Errorf("system-uuid %q: want 8-4-4-4-12 hex digits", clip(s))
	}
	return u, nil
}

// NormalizeMAC is an Ethernet MAC address, lower case with colons.
func NormalizeMAC(s string) (string, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return "", fmt.Errorf("mac %q: want an Ethernet address, 52:54:00:12:34:56", clip(s))
	}
	return hw.String(), nil
}

// clip keeps what a message quotes of untrusted input short.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
