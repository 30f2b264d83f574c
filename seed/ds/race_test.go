package ds

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFirstAnswer(t *testing.T) {
	bases := []string{"http://hangs", "http://fails", "http://answers"}
	open := func(ctx context.Context, base string) (string, error) {
		switch base {
		case "http://hangs":
			<-ctx.Done()
			return "", ctx.Err()
		case "http://fails":
			return "", errors.New("connection refused")
		}
		return "opened " + base, nil
	}
	i, v, errs := firstAnswer(context.Background(), bases, open)
	if i != 2 || v != "opened http://answers" || errs != nil {
		t.Errorf("firstAnswer = %d, %q, %v", i, v, errs)
	}
	i, _, errs = firstAnswer(context.Background(), bases[1:2], open)
	if i != -1 || len(errs) != 1 {
		t.Errorf("one failing base: %d, %v", i, errs)
	}
	panics := func(ctx context.Context, base string) (string, error) {
		if base == "http://answers" {
			panic("a bug")
		}
		return "", errors.New("no")
	}
	i, _, errs = firstAnswer(context.Background(), bases[1:], panics)
	if i != -1 || len(errs) != 2 || errs[1] == nil || !strings.Contains(errs[1].Error(), "a bug") {
		t.Errorf("a panicking open: %d, %v", i, errs)
	}
}

// With a first metadata address that swallows requests, the second
// (IPv6 in the field) is found within the budget; one after the other,
// the first used it all.
func TestEC2SecondURLFoundWhileTheFirstHangs(t *testing.T) {
	imds := newFakeIMDS(t, "ec2/imds.json")
	imds.requireToken = true
	good := httptest.NewServer(imds)
	t.Cleanup(good.Close)
	// An address whose packets go nowhere, as an unrouted 169.254.169.254
	// on an IPv6-only instance behind a firewall that drops them.
	hangs := blackhole(t)
	env := testEnv("", map[string]map[string]any{"Ec2": {"metadata_urls": []any{hangs, good.URL}}}, nil)
	env.Endpoint = ""
	env.Config.Fetch.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := ec2Datasource{}.Fetch(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "i-0a1b2c3d4e5f60718" || s.Subplatform != "metadata ("+good.URL+")" {
		t.Errorf("seed from %q: %q", s.Subplatform, s.InstanceID)
	}
}

func TestOpenStackSecondURLFoundWhileTheFirstHangs(t *testing.T) {
	good := openStackServer(t, "2018-08-27", "latest")
	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova"}, "")
	env.Config.Datasource = map[string]map[string]any{"OpenStack": {"metadata_urls": []any{blackhole(t), good.URL}}}
	env.Config.Fetch.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := openStack{}.Fetch(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Subplatform != "metadata ("+good.URL+")" {
		t.Errorf("seed from %q", s.Subplatform)
	}
}
