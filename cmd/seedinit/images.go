package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seedinit/seedinit/images/initramfs"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runInitramfs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "build" {
		return fail(stderr, "initramfs: usage: seedinit initramfs build --modules-root DIR --kernel-release KVER -o FILE [--add SRC:DST]...")
	}
	fs := flag.NewFlagSet("seedinit initramfs build", flag.ContinueOnError)
	modRoot := fs.String("modules-root", "", "root holding lib/modules/KVER (for example a dpkg -x of Debian's kernel package)")
	release := fs.String("kernel-release", "", "kernel release (the KVER directory name)")
	outFile := fs.String("o", "", "output file (gzip'd newc cpio)")
	self, _ := os.Executable()
	bin := fs.String("seedinit", self, "seedinit binary to install as /init")
	mods := fs.String("modules", "", "comma-separated modules to include instead of the default set")
	var adds stringList
	fs.Var(&adds, "add", "extra file SRC:DST (repeatable)")
	if _, code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	if *outFile == "" || (*modRoot != "" && *release == "") {
		return fail(stderr, "initramfs build: -o is required, and --kernel-release with --modules-root")
	}
	o := initramfs.Options{Seedinit: *bin, ModulesRoot: *modRoot, KernelRelease: *release}
	if *mods != "" {
		o.Modules = strings.Split(*mods, ",")
	}
	for _, a := range adds {
		e, err := initramfs.ParseExtra(a)
		if err != nil {
			return fail(stderr, "initramfs build: %v", err)
		}
		o.Extra = append(o.Extra, e)
	}
	var buf bytes.Buffer
	rep, err := initramfs.Build(&buf, o)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if err := writeFileAtomic(*outFile, buf.Bytes(), 0o644); err != nil {
		return fail(stderr, "initramfs build: %v", err)
	}
	fmt.Fprintf(stdout, "%s: %d bytes, %d files, %d modules", *outFile, buf.Len(), rep.Files, len(rep.Modules))
	if len(rep.Builtin) > 0 {
		fmt.Fprintf(stdout, ", built in: %s", strings.Join(rep.Builtin, " "))
	}
	fmt.Fprintln(stdout)
	if len(rep.Missing) > 0 {
		fmt.Fprintf(stderr, "seedinit: initramfs build: not in this kernel: %s\n", strings.Join(rep.Missing, " "))
	}
	return exitOK
}

// writeFileAtomic writes a host file (not a target's) via rename.
func writeFileAtomic(name string, data []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
