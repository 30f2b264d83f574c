package scripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/seedinit/seedinit/apply"
)

// runParts runs every executable regular file in dir (a target path), in
// name order, as cloud-init's subp.runparts: files without an execute bit
// and directories are passed over, and one script failing does not stop
// the next. The error names each failed script with its exit status.
//
// A script the target cannot run (no interpreter for its #! line, or
// commands cannot run there at all) is passed over too. When no script
// could run, the module is skipped and tries them all again next time;
// when some ran, it fails naming the others, because a skipped module
// would run again the scripts that did, and a per-instance script must
// run once.
func runParts(ctx context.Context, env *apply.Env, label, dir string, prefix []string) error {
	entries, err := env.Root.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return apply.Skip("no %s directory", dir)
	}
	if err != nil {
		return fmt.Errorf("%s: list %s: %w", label, dir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var failed, notRun []error
	attempted, ran := 0, 0
	for _, name := range names {
		p := path.Join(dir, name)
		// Stat follows a symlink (inside the target), as os.path.isfile.
		fi, err := env.Root.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			failed = append(failed, fmt.Errorf("%s: not run: %w", p, err))
			break
		}
		attempted++
		argv := append(append([]string{}, prefix...), p)
		err = run(ctx, env, label, apply.Command{Argv: argv})
		switch {
		case errors.Is(err, apply.ErrSkipped):
			notRun = append(notRun, err)
			continue
		case err != nil:
			failed = append(failed, fmt.Errorf("%s: %w", p, err))
		}
		ran++
	}
	if attempted == 0 {
		return apply.Skip("no executable scripts in %s", dir)
	}
	if ran == 0 && len(failed) == 0 {
		return skipped(notRun...)
	}
	if len(failed) == 0 && len(notRun) == 0 {
		return nil
	}
	var msg string
	switch {
	case len(notRun) == 0:
		msg = fmt.Sprintf("%d of %d scripts in %s failed", len(failed), attempted, dir)
	case len(failed) == 0:
		msg = fmt.Sprintf("%d of %d scripts in %s could not run", len(notRun), attempted, dir)
	default:
		msg = fmt.Sprintf("%d of %d scripts in %s failed and %d could not run", len(failed), attempted, dir, len(notRun))
	}
	for _, e := range notRun {
		// Not wrapped: the module did act, so it must not pass for skipped.
		failed = append(failed, errors.New(skipReason(e)))
	}
	return fmt.Errorf("%s: %s: %w", label, msg, errors.Join(failed...))
}

func runScriptsPerOnce(ctx context.Context, env *apply.Env) error {
	return runParts(ctx, env, "scripts_per_once", apply.Path("scripts", "per-once"), nil)
}

func runScriptsPerBoot(ctx context.Context, env *apply.Env) error {
	return runParts(ctx, env, "scripts_per_boot", apply.Path("scripts", "per-boot"), nil)
}

func runScriptsPerInstance(ctx context.Context, env *apply.Env) error {
	return runParts(ctx, env, "scripts_per_instance", apply.Path("scripts", "per-instance"), nil)
}

// runScriptsUser runs the user-data scripts that consume_data wrote and
// runcmd's script.
func runScriptsUser(ctx context.Context, env *apply.Env) error {
	return runParts(ctx, env, "scripts_user", env.State.InstanceDir("scripts"), nil)
}

// runScriptsVendor runs vendor-data's scripts, each prefixed with
// vendor_data.prefix when set (a program and its arguments).
func runScriptsVendor(ctx context.Context, env *apply.Env) error {
	prefix, err := vendorPrefix(env.Config)
	if err != nil {
		return fmt.Errorf("scripts_vendor: %w", err)
	}
	return runParts(ctx, env, "scripts_vendor", env.State.InstanceDir("scripts", "vendor"), prefix)
}

func vendorPrefix(cfg apply.Config) ([]string, error) {
	vd, ok, err := cfg.Map("vendor_data")
	if err != nil || !ok {
		return nil, err
	}
	v, ok := vd["prefix"]
	if !ok || v == nil {
		return nil, nil
	}
	switch p := v.(type) {
	case string:
		if p == "" {
			return nil, nil
		}
		return []string{p}, nil
	case []any:
		l, err := apply.AsStringList(p, false)
		if err != nil {
			return nil, fmt.Errorf("vendor_data: prefix: %w", err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("vendor_data: prefix: want a string or a list, got %s", apply.TypeName(v))
}
