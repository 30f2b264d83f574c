package ds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// EC2 metadata endpoints: the IPv4 link-local address and the IPv6 one
// that Nitro instances answer on.
const (
	EC2MetadataURL     = "http://169.254.169.254"
	EC2MetadataURLIPv6 = "http://[fd00:ec2::254]"
)

func init() {
	Register(ec2Datasource{})
}

// ec2Datasource is cloud-init's DataSourceEc2 (AWS and the clouds that run
// its API unchanged: Brightbox, ZStack, e24cloud, Outscale).
//
// Settings (datasource: {Ec2: {...}}): metadata_urls (cloud-init's key),
// timeout, retries, and seedinit's imdsv1_fallback (default false: IMDSv2
// only, as cloud-init does on AWS).
type ec2Datasource struct{}

func (ec2Datasource) Name() string       { return "Ec2" }
func (ec2Datasource) NeedsNetwork() bool { return true }

// Probe identifies the platform the way ds-identify's ec2_identify_platform
// does. An unknown platform is a Maybe (strict_id: warn, the default);
// strict_id: true makes it NotFound.
func (d ec2Datasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if platform, reason := identifyEC2Platform(env); platform != "" {
		return Evidence{Verdict: Found, Reason: reason}, nil
	}
	if strings.EqualFold(fmt.Sprint(env.Settings(d.Name())["strict_id"]), "true") {
		return Evidence{Verdict: NotFound, Reason: "no EC2 platform marker in DMI and strict_id is true"}, nil
	}
	return Evidence{Verdict: Maybe, Reason: "no EC2 platform marker in DMI (strict_id is not true)"}, nil
}

// identifyEC2Platform returns cloud-init's cloud name ("aws", "brightbox",
// ...) and the DMI fact that proved it, or "" when nothing did.
func identifyEC2Platform(env *Env) (cloudName, reason string) {
	serial := env.DMIField("product_serial")
	uuid := env.DMIField("product_uuid")
	asset := env.DMIField("chassis_asset_tag")
	vendor := env.DMIField("sys_vendor")
	product := env.DMIField("product_name")
	switch {
	case strings.HasSuffix(strings.ToLower(serial), ".brightbox.com"):
		return "brightbox", fmt.Sprintf("DMI product_serial %q", serial)
	case strings.HasSuffix(strings.ToLower(asset), ".zstack.io"):
		return "zstack", fmt.Sprintf("DMI chassis_asset_tag %q", asset)
	case vendor == "e24cloud":
		return "e24cloud", fmt.Sprintf("DMI sys_vendor %q", vendor)
	case product == "3DS Outscale VM" && vendor == "3DS Outscale":
		return "outscale", fmt.Sprintf("DMI sys_vendor %q product_name %q", vendor, product)
	case strings.HasPrefix(strings.ToLower(uuid), "ec2") && strings.EqualFold(uuid, serial):
		return "aws", fmt.Sprintf("DMI product_uuid and product_serial %q", uuid)
	case strings.HasPrefix(env.HypervisorUUID, "ec2"):
		// ds-identify's check, case-sensitive like it.
		return "aws", fmt.Sprintf("/sys/hypervisor/uuid %q", env.HypervisorUUID)
	}
	return "", ""
}

func (d ec2Datasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	mode := imdsTokenRequired
	if settingBool(settings, "imdsv1_fallback", false) {
		mode = imdsTokenFirst
	}
	cloudName, _ := identifyEC2Platform(env)
	if cloudName == "" {
		cloudName = "unknown"
	}
	return fetchEC2Style(ctx, env, ec2Style{
		datasource:       d.Name(),
		cloudName:        cloudName,
		platform:         "ec2",
		urls:             baseURLs(env, settings, "metadata_urls", EC2MetadataURL, EC2MetadataURLIPv6),
		tokenMode:        mode,
		versions:         imdsVersions,
		identityDocument: true,
		regionFromZone:   true,
	})
}

// ec2Style describes one cloud that serves EC2's layout.
type ec2Style struct {
	datasource, cloudName, platform string
	urls                            []string
	tokenMode                       imdsTokenMode
	versions                        []string
	// identityDocument reads dynamic/instance-identity/document, whose
	// instanceId, region and availabilityZone win (cloud-init on AWS).
	identityDocument bool
	// regionFromZone trims the zone letter to make the region when
	// nothing names it (cloud-init's DataSourceEc2 and its subclasses).
	regionFromZone bool
	// hostnameKey is the meta-data key of the hostname, "local-hostname"
	// when empty (AliYun uses "hostname").
	hostnameKey string
	// passwordServer, when set, is asked for the instance's password
	// (CloudStack, Exoscale).
	passwordServer string
}

// fetchEC2Style crawls the first of style.urls that answers: all are
// asked at once (firstAnswer); should the crawl of the one that answered
// first fail, the others are crawled one after the other.
func fetchEC2Style(ctx context.Context, env *Env, style ec2Style) (*seed.Seed, error) {
	client := newMetadataClient(env, style.datasource)
	type opened struct {
		session *imdsSession
		version string
	}
	first, o, errs := firstAnswer(ctx, style.urls, func(ctx context.Context, base string) (opened, error) {
		session, version, err := openEC2Style(ctx, client, base, style)
		return opened{session, version}, err
	})
	if first < 0 {
		return nil, fmt.Errorf("fetch %s metadata: %w", style.datasource, errors.Join(errs...))
	}
	s, err := crawlEC2Style(ctx, client, o.session, o.version, style.urls[first], style)
	if err == nil {
		return s, nil
	}
	errs = []error{err}
	for i, base := range style.urls {
		if i == first || ctx.Err() != nil {
			continue
		}
		session, version, err := openEC2Style(ctx, client, base, style)
		if err == nil {
			if s, err = crawlEC2Style(ctx, client, session, version, base, style); err == nil {
				return s, nil
			}
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("fetch %s metadata: %w", style.datasource, errors.Join(errs...))
}

// openEC2Style gets a session (a token, or IMDSv1) and the metadata
// version to read from base: the first requests, which tell whether it
// answers at all.
func openEC2Style(ctx context.Context, client *metadataClient, base string, style ec2Style) (*imdsSession, string, error) {
	session := newIMDSSession(client, base, style.tokenMode)
	if err := session.connect(ctx); err != nil {
		return nil, "", err
	}
	version, err := session.pickVersion(ctx, style.versions)
	if err != nil {
		return nil, "", err
	}
	return session, version, nil
}

func crawlEC2Style(ctx context.Context, client *metadataClient, session *imdsSession, version, base string, style ec2Style) (*seed.Seed, error) {
	userData, err := session.get(ctx, version+"/user-data")
	if isStatus(err, http.StatusNotFound) {
		userData, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read user-data: %w", err)
	}
	metadata, err := session.crawl(ctx, version+"/meta-data/")
	if err != nil {
		return nil, fmt.Errorf("crawl meta-data: %w", err)
	}
	var identity map[string]any
	if style.identityDocument {
		doc, err := session.get(ctx, version+"/dynamic/instance-identity/document")
		switch {
		case isStatus(err, http.StatusNotFound):
		case err != nil:
			return nil, fmt.Errorf("read instance identity document: %w", err)
		default:
			if identity, err = parseIdentityDocument(doc); err != nil {
				return nil, fmt.Errorf("parse %s: %w", joinURL(base, version+"/dynamic/instance-identity/document"), err)
			}
		}
	}
	s, err := ec2SeedFromMetadata(metadata, identity, style)
	if err != nil {
		return nil, fmt.Errorf("read metadata from %s: %w", base, err)
	}
	s.UserData = userData
	s.Subplatform = fmt.Sprintf("metadata (%s)", base)
	if style.passwordServer != "" {
		password, err := fetchPassword(ctx, client, style.passwordServer)
		if err != nil {
			// cloud-init logs this and goes on without a password.
			client.log.Warn("read the password server", "url", style.passwordServer, "err", err)
		} else if password != "" {
			s.Config = passwordConfig(password)
		}
	}
	client.log.Info("read EC2-style metadata", "datasource", style.datasource, "url", base, "version", version,
		"imdsv2", style.tokenMode != imdsNoToken && !session.tokenless)
	return s, nil
}

// parseIdentityDocument decodes dynamic/instance-identity/document.
func parseIdentityDocument(doc []byte) (map[string]any, error) {
	var identity map[string]any
	if err := json.Unmarshal(doc, &identity); err != nil {
		return nil, fmt.Errorf("decode instance identity document: %w", err)
	}
	return identity, nil
}

// ec2SeedFromMetadata maps a crawled meta-data tree (and the identity
// document, when read) onto a seed the way cloud-init's DataSourceEc2 does.
func ec2SeedFromMetadata(metadata, identity map[string]any, style ec2Style) (*seed.Seed, error) {
	s := &seed.Seed{
		Datasource: style.datasource,
		Platform:   style.platform,
		CloudName:  style.cloudName,
		Metadata:   metadata,
	}
	s.InstanceID = stringAt(metadata, "instance-id")
	hostnameKey := style.hostnameKey
	if hostnameKey == "" {
		hostnameKey = "local-hostname"
	}
	s.LocalHostname = stringAt(metadata, hostnameKey)
	s.AvailabilityZone = stringAt(metadata, "placement", "availability-zone")
	if s.AvailabilityZone == "" {
		// CloudStack and Exoscale keep it at the top.
		s.AvailabilityZone = stringAt(metadata, "availability-zone")
	}
	if style.identityDocument {
		if id := stringAt(identity, "instanceId"); id != "" {
			s.InstanceID = id
		}
		if az := stringAt(identity, "availabilityZone"); az != "" {
			s.AvailabilityZone = az
		}
		s.Region = stringAt(identity, "region")
	}
	if s.Region == "" {
		s.Region = stringAt(metadata, "placement", "region")
	}
	if s.Region == "" && style.regionFromZone && len(s.AvailabilityZone) > 1 {
		// cloud-init trims the zone letter: us-east-1f -> us-east-1.
		s.Region = s.AvailabilityZone[:len(s.AvailabilityZone)-1]
	}
	if s.InstanceID == "" {
		return nil, errors.New("meta-data has no instance-id")
	}
	s.PublicKeys = publicKeysFromMetadata(metadata["public-keys"])
	if network, ok := metadata["network"].(map[string]any); ok {
		raw, err := json.Marshal(network)
		if err != nil {
			return nil, fmt.Errorf("encode network metadata: %w", err)
		}
		s.NetworkConfig = raw
		s.NetworkFormat = "ec2"
	}
	if identity != nil {
		s.Metadata = copyMap(metadata)
		// Where cloud-init's instance-data keeps it: ds.dynamic.
		s.Metadata["dynamic"] = map[string]any{"instance-identity": map[string]any{"document": identity}}
	}
	return s, nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
