package scripts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// boothookPrefix is the first line that marks a boothook part.
const boothookPrefix = "#cloud-boothook"

// frequencyDirs maps a script part's frequency to its directory under
// /var/lib/cloud/scripts (text/x-shellscript-per-boot and the others).
var frequencyDirs = map[string]string{
	string(apply.PerBoot):     "per-boot",
	string(apply.PerInstance): "per-instance",
	string(apply.PerOnce):     "per-once",
}

// dataSource is user-data or vendor-data, with the places its scripts go.
type dataSource struct {
	name  string
	parts *seed.Processed
	// scriptDir gets plain scripts, run by scripts_user or scripts_vendor.
	scriptDir string
	// freqDir is where scripts with a frequency of their own go.
	freqDir string
	// excluded are content types the config turned off (vendor_data's
	// disabled_handlers).
	excluded map[string]bool
}

// runConsumeData does what cloud-init's part handlers do with user-data and
// vendor-data every boot: scripts are written where the scripts_* modules
// will run them, and boothooks are written and run at once.
func runConsumeData(ctx context.Context, env *apply.Env) error {
	var sources []dataSource
	var errs []error
	allowUser, err := env.Config.Bool("allow_userdata", true)
	if err != nil {
		errs = append(errs, fmt.Errorf("consume user-data: %w", err))
	}
	switch {
	case !allowUser:
		env.Log.Info("allow_userdata is false: user-data scripts and boothooks ignored")
	case env.UserData != nil:
		sources = append(sources, dataSource{
			name: "user-data", parts: env.UserData,
			scriptDir: env.State.InstanceDir("scripts"),
			freqDir:   apply.Path("scripts"),
		})
	}
	if env.VendorData != nil && len(env.VendorData.Parts) > 0 {
		enabled, excluded, err := vendorSettings(env.Config)
		switch {
		case err != nil:
			// As cloud-init, a vendor_data it cannot read turns vendor-data off.
			env.Warn("consume vendor-data: %v: vendor-data scripts and boothooks ignored", err)
		case !enabled:
			env.Log.Info("vendor_data is disabled: vendor-data scripts and boothooks ignored")
		default:
			// Where cloud-init's handlers put vendor scripts: plain ones in
			// the instance's scripts/vendor, others in scripts/vendor/per-*.
			sources = append(sources, dataSource{
				name: "vendor-data", parts: env.VendorData,
				scriptDir: env.State.InstanceDir("scripts", "vendor"),
				freqDir:   apply.Path("scripts", "vendor"),
				excluded:  excluded,
			})
		}
	}
	// A boothook the target cannot run does not keep the others from
	// running: consume_data runs every boot, so the skipped ones are
	// tried again anyway.
	var skippedBoothooks []error
	for _, src := range sources {
		for i, part := range src.parts.Parts {
			if src.excluded[part.ContentType] {
				env.Log.Info("part handler disabled by vendor_data.disabled_handlers", "source", src.name, "part", i, "content_type", part.ContentType)
				continue
			}
			name := partFilename(part, i)
			switch part.Kind {
			case seed.KindScript:
				if err := writeScript(env, src, part, name); err != nil {
					errs = append(errs, fmt.Errorf("consume %s part %d (%s): %w", src.name, i, name, err))
				}
			case seed.KindBoothook:
				err := runBoothook(ctx, env, part, name)
				switch {
				case errors.Is(err, apply.ErrSkipped):
					skippedBoothooks = append(skippedBoothooks, err)
				case err != nil:
					errs = append(errs, fmt.Errorf("consume %s part %d (%s): %w", src.name, i, name, err))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(skippedBoothooks) > 0 {
		return skipped(skippedBoothooks...)
	}
	return nil
}

// vendorSettings reads vendor_data: {enabled, disabled_handlers}. It is on
// unless turned off, as in cloud-init's built-in config.
func vendorSettings(cfg apply.Config) (bool, map[string]bool, error) {
	vd, ok, err := cfg.Map("vendor_data")
	if err != nil {
		return false, nil, err
	}
	if !ok {
		return true, nil, nil
	}
	enabled, err := vd.Bool("enabled", true)
	if err != nil {
		return false, nil, fmt.Errorf("vendor_data: %w", err)
	}
	list, _, err := vd.StringList("disabled_handlers", false)
	if err != nil {
		return false, nil, fmt.Errorf("vendor_data: %w", err)
	}
	excluded := map[string]bool{}
	for _, ct := range list {
		excluded[ct] = true
	}
	return enabled, excluded, nil
}

// partFilename is the part's file name made safe the way cloud-init's
// clean_filename does (slashes become "_", other characters outside
// [A-Za-z0-9_.()-] are dropped); a name that ends up empty or a dot name
// is replaced by part-NNN.
func partFilename(p seed.Part, index int) string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(p.Filename, "/", "_") {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.()", r)) {
			b.WriteRune(r)
		}
	}
	name := b.String()
	if name == "" || name == "." || name == ".." {
		return fmt.Sprintf("part-%03d", index+1)
	}
	return name
}

// dos2unix turns CRLF into LF when the first line ends with CRLF, as
// cloud-init's util.dos2unix does.
func dos2unix(b []byte) []byte {
	s := string(b)
	i := strings.IndexByte(s, '\n')
	if i <= 0 || s[i-1] != '\r' {
		return b
	}
	return []byte(strings.ReplaceAll(s, "\r\n", "\n"))
}

func writeScript(env *apply.Env, src dataSource, part seed.Part, name string) error {
	dir := src.scriptDir
	if part.Frequency != "" {
		sub, ok := frequencyDirs[part.Frequency]
		if !ok {
			if f, err := apply.ParseFrequency(part.Frequency); err == nil {
				sub = frequencyDirs[string(f)]
			}
		}
		if sub == "" {
			return fmt.Errorf("unknown script frequency %q", part.Frequency)
		}
		dir = src.freqDir + "/" + sub
	}
	file := dir + "/" + name
	if _, err := env.Root.WriteFileIfChanged(file, dos2unix(part.Content), 0o700, rootfs.KeepOwner); err != nil {
		return err
	}
	return nil
}

// runBoothook writes a boothook to the instance's boothooks directory
// without its #cloud-boothook line and runs it at once, every boot.
func runBoothook(ctx context.Context, env *apply.Env, part seed.Part, name string) error {
	body := string(dos2unix(part.Content))
	body = strings.TrimPrefix(body, boothookPrefix)
	body = strings.TrimLeft(body, " \t\n\r\v\f")
	file := env.State.InstanceDir("boothooks", name)
	if _, err := env.Root.WriteFileIfChanged(file, []byte(body), 0o700, rootfs.KeepOwner); err != nil {
		return err
	}
	return run(ctx, env, "boothook", apply.Command{Argv: []string{file}, Env: instanceEnv(env)})
}
