package ds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

func init() { Register(cloudStackDatasource{}) }

// cloudStackDatasource is cloud-init's DataSourceCloudStack: the virtual
// router (the DHCP server) serves EC2's layout under latest/ and a
// password server on port 8080.
//
// Settings (datasource: {CloudStack: {...}}): timeout, retries, and
// seedinit's metadata_url and password_server_port (cloud-init has none:
// it finds the router by DNS name data-server, the DHCP lease, then the
// default gateway; seedinit uses the DHCP server only).
type cloudStackDatasource struct{}

func (cloudStackDatasource) Name() string       { return "CloudStack" }
func (cloudStackDatasource) NeedsNetwork() bool { return true }

func (cloudStackDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if p := env.DMIField("product_name"); strings.HasPrefix(p, "CloudStack") {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_name %q", p)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI product_name does not start with CloudStack"}, nil
}

func (d cloudStackDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	var base string
	if urls := baseURLs(env, settings, "metadata_url"); len(urls) > 0 {
		base = urls[0]
	} else if env.DHCPServer.IsValid() {
		base = "http://" + joinHostPort(env.DHCPServer.String(), "80")
	} else {
		return nil, errors.New("fetch CloudStack metadata: no virtual router address (no DHCP server known and no metadata_url)")
	}
	port := passwordServerPort
	if n, ok := settingFloat(settings, "password_server_port"); ok {
		port = fmt.Sprint(int(n))
	}
	passwordURL, err := withPort(base, port)
	if err != nil {
		return nil, fmt.Errorf("fetch CloudStack metadata: %w", err)
	}
	return fetchEC2Style(ctx, env, ec2Style{
		datasource:     d.Name(),
		cloudName:      "cloudstack",
		platform:       "cloudstack",
		urls:           []string{base},
		tokenMode:      imdsNoToken,
		versions:       []string{"latest"},
		passwordServer: passwordURL + "/",
	})
}
