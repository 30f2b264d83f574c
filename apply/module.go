package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/internal/earlyrand"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// Stage is one of cloud-init's four boot stages.
type Stage string

const (
	StageLocal   Stage = "local"
	StageNetwork Stage = "network"
	StageConfig  Stage = "config"
	StageFinal   Stage = "final"
)

// Stages in the order a boot runs them.
var Stages = []Stage{StageLocal, StageNetwork, StageConfig, StageFinal}

// ParseStage accepts a stage name, "init" as cloud-init's name for network,
// and "modules:config"/"modules:final" as cloud-init spells them in status.
func ParseStage(s string) (Stage, error) {
	switch s {
	case "local", "init-local":
		return StageLocal, nil
	case "network", "init":
		return StageNetwork, nil
	case "config", "modules:config", "modules-config":
		return StageConfig, nil
	case "final", "modules:final", "modules-final":
		return StageFinal, nil
	}
	return "", fmt.Errorf("unknown stage %q (want local, network, config or final)", s)
}

// Frequency says how often a module runs, with cloud-init's names.
type Frequency string

const (
	PerInstance Frequency = "once-per-instance"
	PerBoot     Frequency = "always"
	PerOnce     Frequency = "once"
)

// ParseFrequency accepts cloud-init's spellings in config and semaphores.
func ParseFrequency(s string) (Frequency, error) {
	switch s {
	case "once-per-instance", "per-instance", "instance":
		return PerInstance, nil
	case "always", "per-always", "per-boot", "boot":
		return PerBoot, nil
	case "once", "per-once":
		return PerOnce, nil
	}
	return "", fmt.Errorf("unknown frequency %q (want once-per-instance, always or once)", s)
}

// Module is one cloud-config module, with cloud-init's name (cc_<name>).
type Module struct {
	Name      string
	Frequency Frequency
	// Keys are the top-level cloud-config keys the module reads; keys that no
	// module claims are warned about as unknown.
	Keys []string
	Run  func(ctx context.Context, env *Env) error
	// Prestart, when set, is called once per run as soon as the merged
	// config is known, for a module that will run in this run, to start
	// slow work that needs nothing the modules before it do (host keys):
	// it runs alongside them instead of after. What it returns reaches
	// Run as env.Prestarted; Run must not assume it is there.
	Prestart func(ctx context.Context, env *Env) any
}

// ErrSkipped, wrapped in a module's error, means the module chose not to act
// (nothing to do on this target, a tool missing): it is reported, not failed.
var ErrSkipped = errors.New("skipped")

// Skip returns an error that reports the module as skipped with a reason.
func Skip(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSkipped, fmt.Sprintf(format, args...))
}

// ErrDone, with ErrSkipped (SkipDone), means the module had nothing to do
// because its effect is in place already, as after a run whose semaphore
// a power cut lost: it is reported as skipped, and its semaphore is
// written as for a module that ran (cloud-init writes one there too), so
// that it does not run again at every boot.
var ErrDone = errors.New("done before")

// SkipDone reports the module as skipped because its work is done.
func SkipDone(format string, args ...any) error {
	return doneSkip(fmt.Sprintf(format, args...))
}

// doneSkip is both a skip and done.
type doneSkip string

func (e doneSkip) Error() string        { return ErrSkipped.Error() + ": " + string(e) }
func (e doneSkip) Is(target error) bool { return target == ErrSkipped || target == ErrDone }

// Env is what a module gets: the target, the merged config, the instance's
// seed, and the system seams. Modules change the target only through Root
// and Sys.
type Env struct {
	Root   *rootfs.Root
	Config Config
	Seed   *seed.Seed
	// Parts is the processed user-data and vendor-data (scripts, boothooks).
	UserData   *seed.Processed
	VendorData *seed.Processed
	Sys        System
	Log        *slog.Logger
	// Random is where keys and generated passwords come from: crypto/rand,
	// which waits until the kernel's pool is initialised, and a key or a
	// password is worth that wait.
	Random io.Reader
	// EarlyRandom is where what needs unpredictable bytes but is not a
	// secret gets them (password salts, swap and partition UUIDs); nil is
	// earlyrand.Reader, which never blocks: PID 1 must not wait minutes
	// for the pool (no hardware RNG) over a salt. Tests set it to make
	// hashes deterministic, apart from Random so that they can tell which
	// source was read. Use EarlyRand.
	EarlyRandom io.Reader
	State       *State
	// Console is where a module shows the user something (RANDOM passwords,
	// fingerprints, final_message): the console in PID-1 mode, stdout for
	// `seedinit apply`. Never the log file.
	Console io.Writer
	// Stage is the stage the module runs in.
	Stage Stage
	// Prestarted is what the module's Prestart returned in this run, or
	// nil.
	Prestarted any
	// Warnings collects non-fatal problems for status.json.
	warnings []string
	// unrepeatable is set by NoteUnrepeatable.
	unrepeatable bool
}

// EarlyRand is EarlyRandom, or earlyrand.Reader when that is nil.
func (e *Env) EarlyRand() io.Reader {
	if e.EarlyRandom != nil {
		return e.EarlyRandom
	}
	return earlyrand.Reader
}

// NoteUnrepeatable says the module did what running it again would do
// again rather than find done: a user's command ran, a file was appended
// to. Its semaphore is then made durable as soon as it is written, so
// that a power cut once it is done does not run it again; a cut while it
// runs still does (see the README's power cuts).
func (e *Env) NoteUnrepeatable() { e.unrepeatable = true }

// Unrepeatable reports whether NoteUnrepeatable was called.
func (e *Env) Unrepeatable() bool { return e.unrepeatable }

// Warnings returns what Warn recorded.
func (e *Env) Warnings() []string { return e.warnings }

// Warn records a non-fatal problem that status and the log report.
func (e *Env) Warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.warnings = append(e.warnings, msg)
	if e.Log != nil {
		e.Log.Warn(msg)
	}
}

var registry = map[string]Module{}

// Register adds a module implementation. Modules call it from init(); the
// order they run in is moduleOrder's, not registration's.
func Register(m Module) {
	if _, dup := registry[m.Name]; dup {
		panic("apply: module registered twice: " + m.Name)
	}
	if m.Frequency == "" {
		m.Frequency = PerInstance
	}
	registry[m.Name] = m
}

// Lookup finds a registered module.
func Lookup(name string) (Module, bool) {
	m, ok := registry[name]
	return m, ok
}

// Registered lists the registered modules' names, sorted.
func Registered() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// moduleOrder is cloud-init's default module list (Debian's cloud.cfg),
// stage by stage. A stage runs the registered modules in this order; names
// not implemented yet are listed so the order stays right as they land.
var moduleOrder = map[Stage][]string{
	// The local stage writes the network configuration for the OS before
	// its network comes up, as cloud-init's init-local does.
	StageLocal: {"injected_files", "bootstrap_tree", "network"},
	StageNetwork: {
		"consume_data", "seed_random", "bootcmd", "write_files", "growpart", "resizefs",
		"disk_setup", "mounts", "set_hostname", "update_hostname",
		"update_etc_hosts", "ca_certs", "rsyslog", "users_groups", "ssh",
		"set_passwords",
	},
	StageConfig: {
		"ssh_import_id", "keyboard", "locale", "grub_dpkg", "apt_pipelining",
		"apt_configure", "apk_configure", "yum_add_repo", "resolv_conf", "ntp",
		"timezone", "disable_ec2_metadata", "runcmd", "byobu",
	},
	StageFinal: {
		"package_update_upgrade_install", "write_files_deferred", "puppet",
		"chef", "mcollective", "salt_minion", "reset_rmc", "scripts_vendor",
		"scripts_per_once", "scripts_per_boot", "scripts_per_instance",
		"scripts_user", "ssh_authkey_fingerprints", "keys_to_console",
		"install_hotplug", "phone_home", "final_message", "power_state_change",
	},
}

// ModulesFor returns the registered modules of a stage, in run order. A
// config may replace a stage's list with cloud_init_modules,
// cloud_config_modules or cloud_final_modules, as in cloud.cfg; entries may
// be "name" or [name, frequency].
func ModulesFor(stage Stage, cfg Config) ([]Module, []string, error) {
	names := moduleOrder[stage]
	overrides := map[string]Frequency{}
	key := map[Stage]string{StageNetwork: "cloud_init_modules", StageConfig: "cloud_config_modules", StageFinal: "cloud_final_modules"}[stage]
	if key != "" && cfg.Has(key) {
		list, _, err := cfg.List(key)
		if err != nil {
			return nil, nil, err
		}
		names = nil
		for i, e := range list {
			switch v := e.(type) {
			case string:
				names = append(names, v)
			case []any:
				if len(v) == 0 {
					return nil, nil, fmt.Errorf("%s: item %d is empty", key, i)
				}
				n, err := AsString(v[0])
				if err != nil {
					return nil, nil, fmt.Errorf("%s: item %d: %w", key, i, err)
				}
				names = append(names, n)
				n = trimCC(n)
				if len(v) > 1 {
					fs, err := AsString(v[1])
					if err != nil {
						return nil, nil, fmt.Errorf("%s: item %d: %w", key, i, err)
					}
					f, err := ParseFrequency(fs)
					if err != nil {
						return nil, nil, fmt.Errorf("%s: item %d: %w", key, i, err)
					}
					overrides[n] = f
				}
			default:
				return nil, nil, fmt.Errorf("%s: item %d: want a name or [name, frequency], got %s", key, i, TypeName(e))
			}
		}
	}
	var mods []Module
	var missing []string
	for _, n := range names {
		m, ok := registry[trimCC(n)]
		if !ok {
			missing = append(missing, n)
			continue
		}
		if f, ok := overrides[trimCC(n)]; ok {
			m.Frequency = f
		}
		mods = append(mods, m)
	}
	return mods, missing, nil
}

// trimCC turns a cloud.cfg module name into the registered one the way
// cloud-init's form_module_name does: Debian's cloud.cfg writes
// "write-files" and "users-groups", others "cc_write_files.py".
func trimCC(n string) string {
	n = strings.TrimSuffix(strings.ReplaceAll(strings.TrimSpace(n), "-", "_"), ".py")
	return strings.TrimPrefix(n, "cc_")
}
