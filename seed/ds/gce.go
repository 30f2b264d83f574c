package ds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/seedinit/seedinit/seed"
)

// GCEMetadataURL is the metadata server by address: in an initramfs there
// may be no resolver for cloud-init's metadata.google.internal.
const GCEMetadataURL = "http://169.254.169.254/computeMetadata/v1/"

func init() { Register(gceDatasource{}) }

// gceDatasource is cloud-init's DataSourceGCE, read in one request
// (?recursive=true) instead of one per key.
//
// Settings (datasource: {GCE: {...}}): metadata_url, timeout, retries,
// and seedinit's default_user: the user whose "user:key" ssh-keys entries
// are kept besides "cloudinit:" ones (cloud-init takes the distro's
// default user, which a datasource here does not know).
type gceDatasource struct{}

func (gceDatasource) Name() string       { return "GCE" }
func (gceDatasource) NeedsNetwork() bool { return true }

func (gceDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if p := env.DMIField("product_name"); p == "Google Compute Engine" || p == "Google" {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_name %q", p)}, nil
	}
	if s := env.DMIField("product_serial"); strings.HasPrefix(s, "GoogleCloud-") {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_serial %q", s)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI product_name is not Google Compute Engine nor product_serial GoogleCloud-*"}, nil
}

func (d gceDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	base := baseURLs(env, settings, "metadata_url", GCEMetadataURL)[0]
	if env.Endpoint != "" {
		base = endpointPath(env, "/computeMetadata/", "computeMetadata/v1/")
	}
	client := newMetadataClient(env, d.Name())
	client.header.Set("Metadata-Flavor", "Google")
	url := strings.TrimRight(base, "/") + "/?recursive=true&alt=json"
	md, err := client.getJSONObject(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch GCE metadata: %w", err)
	}
	s, err := gceSeed(md, settingString(settings, "default_user"), time.Now())
	if err != nil {
		return nil, fmt.Errorf("read GCE metadata from %s: %w", Redact(url), err)
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(base))
	return s, nil
}

// gceSeed maps the recursive metadata document the way cloud-init's
// read_md does with its per-key requests.
func gceSeed(md map[string]any, defaultUser string, now time.Time) (*seed.Seed, error) {
	instance, _ := md["instance"].(map[string]any)
	project, _ := md["project"].(map[string]any)
	instanceAttrs, _ := instance["attributes"].(map[string]any)
	projectAttrs, _ := project["attributes"].(map[string]any)

	s := &seed.Seed{
		Datasource: "GCE", Platform: "gce", CloudName: "gce",
		InstanceID: stringAt(instance, "id"),
	}
	zone := stringAt(instance, "zone")
	hostname := stringAt(instance, "hostname")
	if s.InstanceID == "" || zone == "" || hostname == "" {
		// cloud-init's required keys: without them it is not GCE.
		return nil, fmt.Errorf("instance id, zone and hostname are required (got %q, %q, %q)", s.InstanceID, zone, hostname)
	}
	// "projects/123/zones/us-central1-a" -> "us-central1-a".
	s.AvailabilityZone = zone[strings.LastIndex(zone, "/")+1:]
	if i := strings.LastIndex(s.AvailabilityZone, "-"); i > 0 {
		s.Region = s.AvailabilityZone[:i]
	}
	// GCE's names are long FQDNs; cloud-init asks for the short one.
	s.LocalHostname, _, _ = strings.Cut(hostname, ".")

	keyLines := gceKeyLines(instanceAttrs, projectAttrs)
	s.PublicKeys = gceKeysFor(keyLines, defaultUser, now)

	if ud, ok := instanceAttrs["user-data"].(string); ok {
		s.UserData = []byte(ud)
		switch enc := stringAt(instanceAttrs, "user-data-encoding"); enc {
		case "":
		case "base64":
			decoded, err := base64.StdEncoding.DecodeString(ud)
			if err != nil {
				return nil, fmt.Errorf("decode base64 user-data: %w", err)
			}
			s.UserData = decoded
		default:
			// cloud-init warns and uses it as it is.
		}
	}
	lines := make([]any, len(keyLines))
	for i, l := range keyLines {
		lines[i] = l
	}
	s.Metadata = map[string]any{
		"instance-id":       s.InstanceID,
		"availability-zone": s.AvailabilityZone,
		"local-hostname":    hostname,
		"public-keys-data":  lines,
		"instance":          instance,
		"project":           project,
	}
	return s, nil
}

// gceKeyLines gathers ssh-keys with cloud-init's precedence: the
// instance's sshKeys and ssh-keys, then the project's unless the instance
// blocks them (block-project-ssh-keys) or uses the legacy sshKeys.
func gceKeyLines(instanceAttrs, projectAttrs map[string]any) []string {
	sources := []string{stringAt(instanceAttrs, "sshKeys"), stringAt(instanceAttrs, "ssh-keys")}
	block := strings.ToLower(stringAt(instanceAttrs, "block-project-ssh-keys"))
	if block != "true" && stringAt(instanceAttrs, "sshKeys") == "" {
		sources = append(sources, stringAt(projectAttrs, "ssh-keys"), stringAt(projectAttrs, "sshKeys"))
	}
	var lines []string
	for _, src := range sources {
		for _, l := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// gceKeysFor keeps the keys of lines "user:key" that belong to cloudinit
// or defaultUser and have not expired.
func gceKeysFor(lines []string, defaultUser string, now time.Time) []string {
	var keys []string
	for _, l := range lines {
		user, key, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if user != "cloudinit" && (defaultUser == "" || user != defaultUser) {
			continue
		}
		if gceKeyExpired(key, now) {
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// gceKeyExpired reads the expireOn of a "google-ssh {json}" key; keys
// without that schema never expire.
func gceKeyExpired(key string, now time.Time) bool {
	fields := strings.Fields(key)
	if len(fields) < 4 || fields[2] != "google-ssh" {
		return false
	}
	// The JSON is everything after the third field.
	rest := key
	for i := 0; i < 3; i++ {
		rest = strings.TrimLeft(rest, " \t")
		if j := strings.IndexAny(rest, " \t"); j >= 0 {
			rest = rest[j:]
		}
	}
	var meta struct {
		ExpireOn string `json:"expireOn"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &meta); err != nil || meta.ExpireOn == "" {
		return false
	}
	expiry, err := time.Parse("2006-01-02T15:04:05-0700", meta.ExpireOn)
	if err != nil || !strings.HasSuffix(meta.ExpireOn, "+0000") {
		return false
	}
	return now.After(expiry)
}
