package ds

import (
	"context"
	"fmt"

	"github.com/seedinit/seedinit/seed"
)

// AliYunMetadataURL is Alibaba Cloud's metadata service.
const AliYunMetadataURL = "http://100.100.100.200"

// aliYunProduct is the DMI product_name of an ECS instance.
const aliYunProduct = "Alibaba Cloud ECS"

func init() { Register(aliYunDatasource{}) }

// aliYunDatasource is cloud-init's DataSourceAliYun: EC2's layout at
// 100.100.100.200, API version 2016-01-01, plain GETs (cloud-init sends no
// IMDSv2 token there), the hostname under "hostname".
//
// Settings (datasource: {AliYun: {...}}): metadata_urls, timeout, retries.
type aliYunDatasource struct{}

func (aliYunDatasource) Name() string       { return "AliYun" }
func (aliYunDatasource) NeedsNetwork() bool { return true }

func (aliYunDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if p := env.DMIField("product_name"); p == aliYunProduct {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI product_name %q", p)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: fmt.Sprintf("DMI product_name is not %q", aliYunProduct)}, nil
}

func (d aliYunDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	s, err := fetchEC2Style(ctx, env, ec2Style{
		datasource:     d.Name(),
		cloudName:      "aliyun",
		platform:       "aliyun",
		urls:           baseURLs(env, env.Settings(d.Name()), "metadata_urls", AliYunMetadataURL),
		tokenMode:      imdsNoToken,
		versions:       []string{"2016-01-01"},
		hostnameKey:    "hostname",
		regionFromZone: true,
	})
	if err != nil {
		return nil, err
	}
	// cloud-init leaves these empty (ECS has no placement/ tree); the
	// tree has them under its own names.
	if s.Region == "" {
		s.Region = stringAt(s.Metadata, "region-id")
	}
	if s.AvailabilityZone == "" {
		s.AvailabilityZone = stringAt(s.Metadata, "zone-id")
	}
	if s.LocalHostname == "" {
		s.LocalHostname = "localhost.localdomain"
	}
	return s, nil
}
