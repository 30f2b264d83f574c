package kmod

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel is the seam to the running kernel: tests record instead.
type Kernel interface {
	// FinitModule loads the module file f with params and flags.
	FinitModule(f *os.File, params string, flags int) error
	// Loaded reports whether a module of that name is loaded or built in.
	Loaded(name string) bool
}

// RealKernel talks to the running kernel.
type RealKernel struct{}

// FinitModule calls finit_module(2).
func (RealKernel) FinitModule(f *os.File, params string, flags int) error {
	return unix.FinitModule(int(f.Fd()), params, flags)
}

// Loaded checks /sys/module, which lists loaded and built-in modules that
// have parameters or a version; /proc/modules is not needed.
func (RealKernel) Loaded(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/module", name))
	return err == nil
}

// Loader loads modules from one kernel's module directory.
type Loader struct {
	Index  *Index
	Dir    string // /lib/modules/<release>
	Kernel Kernel
	Log    *slog.Logger
	// Loaded, when set, is told of each module the kernel took, with when
	// its load began and how long the kernel spent on it: where a boot's
	// module time goes.
	Loaded func(name string, start time.Time, d time.Duration)
}

// Load loads name (a module name or a modalias) with everything it needs.
// A module that is built in or already loaded is not an error; a soft
// dependency that fails to load is only logged (crc32c_intel fails with
// ENODEV under TCG and crc32c_generic serves instead).
func (l *Loader) Load(name string) error {
	mods, builtin := l.Index.Lookup(name)
	if builtin && len(mods) == 0 {
		return nil
	}
	if len(mods) == 0 {
		if l.Kernel.Loaded(Name(name)) {
			return nil
		}
		return fmt.Errorf("load module %s: not in the module index", name)
	}
	var errs []error
	for _, m := range mods {
		if err := l.loadWithDeps(m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (l *Loader) loadWithDeps(name string) error {
	order, err := l.Index.LoadOrder(name)
	if err != nil {
		return fmt.Errorf("load module %s: %w", name, err)
	}
	hard := map[string]bool{}
	closure, _ := l.Index.depClosure(name)
	for _, n := range closure {
		hard[n] = true
	}
	for _, n := range order {
		err := l.loadOne(n)
		if err == nil {
			continue
		}
		if !hard[n] {
			l.log().Debug("soft dependency not loaded", "module", n, "for", name, "error", err.Error())
			continue
		}
		return fmt.Errorf("load module %s: %w", name, err)
	}
	return nil
}

func (l *Loader) loadOne(name string) error {
	if l.Kernel.Loaded(name) {
		return nil
	}
	m := l.Index.Modules[name]
	if m == nil {
		return fmt.Errorf("%s: not in the module index", name)
	}
	p := filepath.Join(l.Dir, filepath.FromSlash(m.Path))
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	flags := 0
	if strings.HasSuffix(p, ".xz") || strings.HasSuffix(p, ".zst") || strings.HasSuffix(p, ".gz") {
		// The kernel decompresses it (CONFIG_MODULE_DECOMPRESS).
		flags |= unix.MODULE_INIT_COMPRESSED_FILE
	}
	start := time.Now()
	err = l.Kernel.FinitModule(f, "", flags)
	switch {
	case err == nil:
		d := time.Since(start)
		l.log().Debug("module loaded", "module", name, "duration", d.Round(time.Microsecond))
		if l.Loaded != nil {
			l.Loaded(name, start, d)
		}
		return nil
	case errors.Is(err, unix.EEXIST):
		return nil
	}
	return fmt.Errorf("%s (%s): %w", name, m.Path, err)
}

func (l *Loader) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// coldplugParallel bounds concurrent module loads.
const coldplugParallel = 4
