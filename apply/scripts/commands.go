package scripts

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/earlyrand"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// bootcmdDir holds bootcmd's script while it runs. It is in the target
// (the command is chrooted there) and under /run, as cloud-init's own
// temporary directory for root is, so that no /tmp cleaner races it.
const bootcmdDir = "/run/seedinit/tmp"

// commandList reads bootcmd or runcmd as Shellify's input.
func commandList(env *apply.Env, key string) ([]any, bool, error) {
	v, ok := env.Config[key]
	if !ok || v == nil {
		return nil, false, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, true, fmt.Errorf("%s: want a list, got %s", key, apply.TypeName(v))
	}
	return list, true, nil
}

// runBootcmd runs bootcmd every boot, early, as one /bin/sh script with
// INSTANCE_ID in its environment.
func runBootcmd(ctx context.Context, env *apply.Env) error {
	cmds, ok, err := commandList(env, "bootcmd")
	if err != nil {
		return fmt.Errorf("bootcmd: %w", err)
	}
	if !ok {
		return apply.Skip("no bootcmd in the config")
	}
	script, err := Shellify(cmds)
	if err != nil {
		return fmt.Errorf("bootcmd: %w", err)
	}
	// A name only needs to be unique: earlyrand, because crypto/rand
	// would hold PID 1's boot until the kernel's pool is ready.
	var suffix [6]byte
	earlyrand.Read(suffix[:])
	file := bootcmdDir + "/bootcmd-" + hex.EncodeToString(suffix[:]) + ".sh"
	if err := env.Root.MkdirAll(bootcmdDir, 0o700, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("bootcmd: %w", err)
	}
	if err := env.Root.WriteFile(file, []byte(script), 0o600, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("bootcmd: %w", err)
	}
	defer func() {
		if err := env.Root.Remove(file); err != nil {
			env.Warn("bootcmd: %v", err)
		}
	}()
	err = run(ctx, env, "bootcmd", apply.Command{Argv: []string{"/bin/sh", file}, Env: instanceEnv(env)})
	switch {
	case errors.Is(err, apply.ErrSkipped):
		return skipped(err)
	case err != nil:
		return fmt.Errorf("bootcmd: %w", err)
	}
	return nil
}

// runRuncmd writes runcmd as the instance's scripts/runcmd; scripts_user
// runs it in the final stage, with the user's other scripts.
func runRuncmd(ctx context.Context, env *apply.Env) error {
	cmds, ok, err := commandList(env, "runcmd")
	if err != nil {
		return fmt.Errorf("runcmd: %w", err)
	}
	if !ok {
		return apply.Skip("no runcmd in the config")
	}
	script, err := Shellify(cmds)
	if err != nil {
		return fmt.Errorf("runcmd: %w", err)
	}
	file := env.State.InstanceDir("scripts", "runcmd")
	if _, err := env.Root.WriteFileIfChanged(file, []byte(script), 0o700, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("runcmd: %w", err)
	}
	return nil
}
