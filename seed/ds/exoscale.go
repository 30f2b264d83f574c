package ds

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// ExoscaleMetadataURL is Exoscale's metadata service (EC2 layout, API
// version 1.0); its password server listens on port 8080 of the same host.
const ExoscaleMetadataURL = "http://169.254.169.254"

func init() { Register(exoscaleDatasource{}) }

// exoscaleDatasource is cloud-init's DataSourceExoscale.
//
// Settings (datasource: {Exoscale: {...}}): metadata_url, api_version,
// password_server_port, timeout, retries (cloud-init's keys).
type exoscaleDatasource struct{}

func (exoscaleDatasource) Name() string       { return "Exoscale" }
func (exoscaleDatasource) NeedsNetwork() bool { return true }

func (exoscaleDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if p := env.DMIField("product_name"); strings.HasPrefix(p, "Exoscale") {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_name %q", p)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI product_name does not start with Exoscale"}, nil
}

func (d exoscaleDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	base := baseURLs(env, settings, "metadata_url", ExoscaleMetadataURL)[0]
	version := settingString(settings, "api_version")
	if version == "" {
		version = "1.0"
	}
	port := settingString(settings, "password_server_port")
	if n, ok := settingFloat(settings, "password_server_port"); ok {
		port = fmt.Sprint(int(n))
	}
	if port == "" {
		port = passwordServerPort
	}
	passwordURL, err := withPort(base, port)
	if err != nil {
		return nil, fmt.Errorf("fetch Exoscale metadata: %w", err)
	}
	return fetchEC2Style(ctx, env, ec2Style{
		datasource:     d.Name(),
		cloudName:      "exoscale",
		platform:       "exoscale",
		urls:           []string{base},
		tokenMode:      imdsNoToken,
		versions:       []string{version},
		passwordServer: joinURL(passwordURL, version+"/"),
	})
}

// withPort returns base with its port replaced.
func withPort(base, port string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse metadata URL %q: %w", base, err)
	}
	u.Host = joinHostPort(u.Hostname(), port)
	u.Path = ""
	return u.String(), nil
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
