package merge

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"

	"github.com/seedinit/seedinit/internal/testenv"
)

// TestUserDataAgainstCloudInit feeds each testdata/diff/<name>/user-data
// (and vendor-data, when there is one) to cloud-init 22.4.2's
// UserDataProcessor and part handlers (testdata/oracle.py) and to
// seed.ProcessUserData + MergeParts + MergeMany, and compares the merged
// user config (cloud_config.txt), the merged vendor config, the two
// combined as cloud-init's ConfigMerger does, and the scripts and
// boothooks handed to their handlers. testdata/diff/generate.py writes the
// inputs. No case differs on purpose today; a case that does must say why
// in knownDifferences.
func TestUserDataAgainstCloudInit(t *testing.T) {
	pythonWithCloudInit(t)
	dirs, err := filepath.Glob(filepath.Join("testdata", "diff", "*", "user-data"))
	if err != nil || len(dirs) < 20 {
		t.Fatalf("want at least 20 inputs under testdata/diff, found %d (%v)", len(dirs), err)
	}
	for _, userDataPath := range dirs {
		dir := filepath.Dir(userDataPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			userData, err := os.ReadFile(userDataPath)
			if err != nil {
				t.Fatal(err)
			}
			vendorData, err := os.ReadFile(filepath.Join(dir, "vendor-data"))
			hasVendor := err == nil
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}

			req := map[string]any{"mode": "userdata", "user_data": base64.StdEncoding.EncodeToString(userData), "vendor_data": nil}
			if hasVendor {
				req["vendor_data"] = base64.StdEncoding.EncodeToString(vendorData)
			}
			want := runOracle(t, req)

			config, scripts := processAndMerge(t, userData, "user-data")
			vendorConfig := map[string]any{}
			if hasVendor {
				var vendorScripts []any
				vendorConfig, vendorScripts = processAndMerge(t, vendorData, "vendor-data")
				scripts = append(scripts, vendorScripts...)
			}
			got := map[string]any{
				"config":        config,
				"vendor_config": vendorConfig,
				"combined":      MergeMany(config, vendorConfig),
				"scripts":       scripts,
			}
			if diff := cmp.Diff(want, canonical(t, got)); diff != "" {
				if why, ok := knownDifferences[filepath.Base(dir)]; ok {
					testenv.SkipOptional(t, "differs from cloud-init on purpose: ", why, "\n", diff)
				}
				t.Errorf("differs from cloud-init (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

// knownDifferences names the inputs where seedinit differs from cloud-init
// on purpose, and why.
var knownDifferences = map[string]string{}

func errNoNetwork(context.Context, string) ([]byte, error) {
	return nil, errors.New("no network in tests")
}

// processAndMerge is what seedinit does with user-data or vendor-data:
// decode it into parts, merge the cloud-configs, and list the scripts and
// boothooks as [source, content type, filename, content] the way
// testdata/oracle.py records what cloud-init's handlers receive.
func processAndMerge(t *testing.T, raw []byte, name string) (map[string]any, []any) {
	t.Helper()
	processed, err := seed.ProcessUserData(context.Background(), raw, seed.Options{Name: name, Fetch: errNoNetwork})
	if err != nil {
		t.Fatalf("seed.ProcessUserData(%s): %v", name, err)
	}
	for _, w := range processed.Warnings {
		t.Logf("%s warning: %s", name, w)
	}
	config, errs := MergeParts(processed.Parts)
	for _, err := range errs {
		t.Logf("%s: left out: %v", name, err)
	}
	scripts := []any{}
	for _, p := range processed.Parts {
		if p.Kind == seed.KindScript || p.Kind == seed.KindBoothook {
			scripts = append(scripts, []any{name, p.ContentType, p.Filename, string(p.Content)})
		}
	}
	return config, scripts
}
