package ds

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seedinit/seedinit/seed"
)

// DigitalOceanMetadataURL is the droplet metadata document.
const DigitalOceanMetadataURL = "http://169.254.169.254/metadata/v1.json"

func init() { Register(digitalOceanDatasource{}) }

// digitalOceanDatasource is cloud-init's DataSourceDigitalOcean: one JSON
// document with the droplet's id, hostname, keys, region, interfaces,
// user-data and vendor-data.
//
// Settings (datasource: {DigitalOcean: {...}}): metadata_url, timeout,
// retries. cloud-init's use_ip4LL (a link-local address of its own) is
// the network stage's job here.
type digitalOceanDatasource struct{}

func (digitalOceanDatasource) Name() string       { return "DigitalOcean" }
func (digitalOceanDatasource) NeedsNetwork() bool { return true }

func (digitalOceanDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if v := env.DMIField("sys_vendor"); v == "DigitalOcean" {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI sys_vendor %q", v)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI sys_vendor is not DigitalOcean"}, nil
}

func (d digitalOceanDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	url := baseURLs(env, env.Settings(d.Name()), "metadata_url", DigitalOceanMetadataURL)[0]
	if env.Endpoint != "" {
		url = endpointPath(env, ".json", "metadata/v1.json")
	}
	body, err := newMetadataClient(env, d.Name()).get(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch DigitalOcean metadata: %w", err)
	}
	s, err := digitalOceanSeed(body, env.DMIField("product_serial"))
	if err != nil {
		return nil, fmt.Errorf("read DigitalOcean metadata from %s: %w", Redact(url), err)
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(url))
	return s, nil
}

// digitalOceanSeed maps v1.json; the droplet id in DMI product_serial
// stands in for missing id and hostname, as in cloud-init.
func digitalOceanSeed(body []byte, dmiDropletID string) (*seed.Seed, error) {
	md, err := decodeJSONObject(body)
	if err != nil {
		return nil, fmt.Errorf("decode v1.json: %w", err)
	}
	s := &seed.Seed{
		Datasource: "DigitalOcean", Platform: "digitalocean", CloudName: "digitalocean",
		Metadata:      md,
		InstanceID:    stringAt(md, "droplet_id"),
		LocalHostname: stringAt(md, "hostname"),
		// cloud-init calls the region the availability zone.
		AvailabilityZone: stringAt(md, "region"),
		PublicKeys:       listOfStrings(md["public_keys"]),
		UserData:         userDataBytes(md["user_data"]),
		VendorData:       userDataBytes(md["vendor_data"]),
	}
	if s.InstanceID == "" {
		s.InstanceID = dmiDropletID
	}
	if s.LocalHostname == "" {
		s.LocalHostname = s.InstanceID
	}
	if s.AvailabilityZone == "" {
		s.AvailabilityZone = "default"
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("no droplet_id")
	}
	if ifaces, ok := md["interfaces"]; ok && ifaces != nil {
		// The values are kept as the droplet wrote them: cloud-init
		// configures the interfaces in the document's key order, which a
		// decoded map has lost.
		var network struct {
			Interfaces json.RawMessage `json:"interfaces"`
			DNS        json.RawMessage `json:"dns,omitempty"`
		}
		if err := json.Unmarshal(body, &network); err != nil {
			return nil, fmt.Errorf("decode v1.json: %w", err)
		}
		raw, err := json.Marshal(network)
		if err != nil {
			return nil, fmt.Errorf("encode network metadata: %w", err)
		}
		s.NetworkConfig, s.NetworkFormat = raw, "digitalocean"
	}
	return s, nil
}
