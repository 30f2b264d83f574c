package ds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/seedinit/seedinit/seed"
)

func init() { Register(firecrackerMMDS{}) }

// Firecracker's microVM metadata service (MMDS) answers on a link-local
// address (169.254.169.254 unless the host configured another) from a
// JSON document the host puts there. Version 2 is a session: a PUT to
// /latest/api/token with X-metadata-token-ttl-seconds returns a token,
// which every GET carries in X-metadata-token. A GET answers the JSON
// value at its path when it asks for application/json, and otherwise in
// EC2's IMDS text form (an object as its keys, one per line, objects with
// a trailing slash; a string as itself), which is all a host configured
// with imds_compat answers.
//
// The document holds the seed in one of two shapes:
//
//   - NoCloud's: {"meta-data": {...} or "...", "user-data": "...",
//     "vendor-data": ..., "network-config": ...}, meta-data and user-data
//     both needed as for a seed directory; a signed seed has its
//     manifest and signature beside them ("seed-manifest": "...",
//     "seed-manifest.sig": "-----BEGIN SSH SIGNATURE-----...") and its
//     signed parts as strings;
//   - EC2's: {"latest": {"meta-data": {...}, "user-data": "..."}}, read as
//     the Ec2 source reads IMDS (also in the text form).
//
// cloud-init has no MMDS source (its request is open); the name
// datasource_list takes is "Firecracker".
const (
	FirecrackerMMDSURL         = "http://169.254.169.254"
	firecrackerTokenHeader     = "X-metadata-token"
	firecrackerTokenTTLHeader  = "X-metadata-token-ttl-seconds"
	firecrackerTokenTTL        = 6 * time.Hour // MMDS's maximum, 21600 s
	firecrackerVirtioMMIOParam = "virtio_mmio.device="
)

type firecrackerMMDS struct{}

func (firecrackerMMDS) Name() string       { return "Firecracker" }
func (firecrackerMMDS) NeedsNetwork() bool { return true }

// AnswersOnLinkLocal: a microVM usually has no DHCP server; MMDS answers
// any address on the link.
func (firecrackerMMDS) AnswersOnLinkLocal() bool { return true }

// Probe: Firecracker gives a guest no SMBIOS tables and, on x86 without
// ACPI, declares its virtio devices on the kernel command line. Other
// Firecracker guests (ACPI, arm64's device tree) show nothing that is
// Firecracker's alone: datasource_list or seedinit.ds= names the source
// there, and a machine without SMBIOS tables is not taken for one.
func (firecrackerMMDS) Probe(ctx context.Context, env *Env) (Evidence, error) {
	noDMI := env.DMIField("sys_vendor") == "" && env.DMIField("product_name") == ""
	if noDMI && strings.Contains(" "+env.Cmdline, " "+firecrackerVirtioMMIOParam) {
		return Evidence{Verdict: Found, Reason: "no SMBIOS tables and virtio-mmio devices on the kernel command line (Firecracker)"}, nil
	}
	if !noDMI {
		return Evidence{Verdict: NotFound, Reason: "the machine has SMBIOS tables (DMI sys_vendor or product_name); Firecracker gives none"}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "no virtio-mmio devices on the kernel command line; name Firecracker in datasource_list or seedinit.ds= for a microVM with ACPI or a device tree"}, nil
}

func (d firecrackerMMDS) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	client := newMetadataClient(env, d.Name())
	bases := baseURLs(env, env.Settings(d.Name()), "metadata_urls", FirecrackerMMDSURL)
	first, session, errs := firstAnswer(ctx, bases, func(ctx context.Context, base string) (*imdsSession, error) {
		s := newIMDSSession(client, base, imdsTokenRequired)
		s.tokenHeader, s.ttlHeader, s.ttl = firecrackerTokenHeader, firecrackerTokenTTLHeader, firecrackerTokenTTL
		if err := s.connect(ctx); err != nil {
			return nil, fmt.Errorf("get an MMDS v2 token from %s: %w", Redact(base), err)
		}
		return s, nil
	})
	if first < 0 {
		return nil, fmt.Errorf("fetch Firecracker MMDS: %w", errors.Join(errs...))
	}
	base := bases[first]
	s, err := readMMDS(ctx, client, session, base)
	if err != nil {
		return nil, fmt.Errorf("fetch Firecracker MMDS at %s: %w", Redact(base), err)
	}
	s.Datasource, s.Platform, s.CloudName = d.Name(), "firecracker", "firecracker"
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(base))
	return s, nil
}

var mmdsStyle = ec2Style{
	datasource: "Firecracker", cloudName: "firecracker", platform: "firecracker",
	tokenMode: imdsTokenRequired, versions: []string{"latest"},
}

// readMMDS reads the whole document as JSON and takes the seed from its
// shape; a service that answers only the text form is crawled as IMDS.
func readMMDS(ctx context.Context, client *metadataClient, session *imdsSession, base string) (*seed.Seed, error) {
	body, err := session.getWith(ctx, "", http.Header{"Accept": {"application/json"}})
	if err != nil {
		return nil, err
	}
	doc, jsonErr := decodeJSONObject(body)
	if jsonErr != nil {
		// imds_compat: keys one per line. Only EC2's shape can be
		// crawled so.
		return crawlEC2Style(ctx, client, session, "latest", base, mmdsStyle)
	}
	if latest, ok := doc["latest"].(map[string]any); ok {
		if md, ok := latest["meta-data"].(map[string]any); ok {
			s, err := ec2SeedFromMetadata(md, nil, mmdsStyle)
			if err != nil {
				return nil, err
			}
			if ud, ok := latest["user-data"]; ok {
				if s.UserData, err = mmdsPart(ud, "latest/user-data"); err != nil {
					return nil, err
				}
			}
			return s, nil
		}
	}
	if _, ok := doc["meta-data"]; ok {
		tree := mapTree{}
		for _, name := range seed.PartNames {
			v, ok := doc[name]
			if !ok {
				continue
			}
			b, err := mmdsPart(v, name)
			if err != nil {
				return nil, err
			}
			tree[name] = b
		}
		// The seed's manifest and its signature, as strings beside the
		// parts. The manifest's digests are over a part's bytes as the
		// host wrote them: a string part (an object's JSON here is not
		// the host's bytes).
		for _, name := range []string{seed.ManifestFile, seed.ManifestSignatureFile} {
			if v, ok := doc[name].(string); ok {
				tree[name] = []byte(v)
			}
		}
		d := &noCloudData{meta: map[string]any{}}
		found, err := d.readTree(tree, "MMDS")
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, errors.New("the document has no meta-data")
		}
		return noCloudSeed(d)
	}
	return nil, errors.New(`the document holds no seed: neither "meta-data" and "user-data" nor "latest": {"meta-data": ...}`)
}

// mmdsPart is a seed part from the document: a string as it is, an
// object or list as JSON (a YAML reader reads it), nothing else.
func mmdsPart(v any, name string) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case map[string]any, []any:
		return json.Marshal(v)
	}
	return nil, fmt.Errorf("%s is a %T, want a string or an object", name, v)
}
