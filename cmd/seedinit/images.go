package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seedinit/seedinit/images/initramfs"
	"github.com/seedinit/seedinit/images/seedimg"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runInitramfs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "build" {
		return fail(stderr, "initramfs: usage: seedinit initramfs build --modules-root DIR --kernel-release KVER -o FILE [--add SRC:DST]... [--no-init] [--compress gzip|none]")
	}
	fs := flag.NewFlagSet("seedinit initramfs build", flag.ContinueOnError)
	modRoot := fs.String("modules-root", "", "root holding lib/modules/KVER (for example a dpkg -x of Debian's kernel package)")
	release := fs.String("kernel-release", "", "kernel release (the KVER directory name)")
	outFile := fs.String("o", "", "output file (gzip'd newc cpio)")
	self, _ := os.Executable()
	bin := fs.String("seedinit", self, "seedinit binary to install as /init")
	mods := fs.String("modules", "", "comma-separated modules to include instead of the default set")
	noInit := fs.Bool("no-init", false, "leave out /init: only the modules, their index and --add files, to merge into an initramfs with its own init (u-root's -base)")
	compress := fs.String("compress", "gzip", "gzip, or none for a bare cpio (u-root's -base reads only that)")
	var adds stringList
	fs.Var(&adds, "add", "extra file SRC:DST (repeatable)")
	if _, code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	if *outFile == "" || (*modRoot != "" && *release == "") {
		return fail(stderr, "initramfs build: -o is required, and --kernel-release with --modules-root")
	}
	o := initramfs.Options{Seedinit: *bin, ModulesRoot: *modRoot, KernelRelease: *release, NoInit: *noInit}
	switch *compress {
	case "gzip":
	case "none":
		o.Uncompressed = true
	default:
		return fail(stderr, "initramfs build: --compress %q: want gzip or none", *compress)
	}
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

// runSeed is `seedinit seed build`: NoCloud and config-drive images as
// ISO9660 or FAT, the Go replacement for cloud-localds and genisoimage.
func runSeed(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "build" {
		return fail(stderr, "seed: usage: seedinit seed build --kind nocloud|configdrive --format iso|vfat --meta-data F [--user-data F] [--network-config F] [--vendor-data F] -o OUT")
	}
	fs := flag.NewFlagSet("seedinit seed build", flag.ContinueOnError)
	kind := fs.String("kind", "nocloud", "nocloud (label cidata) or configdrive (label config-2)")
	format := fs.String("format", "iso", "iso or vfat")
	userData := fs.String("user-data", "", "user-data file")
	metaData := fs.String("meta-data", "", "meta-data file (YAML or JSON)")
	netConfig := fs.String("network-config", "", "network config file (network_data.json for a config drive)")
	vendorData := fs.String("vendor-data", "", "vendor-data file")
	label := fs.String("label", "", "volume label (default: cidata or config-2)")
	outFile := fs.String("o", "", "output image")
	if _, code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	if *outFile == "" {
		return fail(stderr, "seed build: -o is required")
	}
	var o seedimg.Options
	var err error
	if o.Kind, err = seedimg.ParseKind(*kind); err != nil {
		return fail(stderr, "seed build: %v", err)
	}
	if o.Format, err = seedimg.ParseFormat(*format); err != nil {
		return fail(stderr, "seed build: %v", err)
	}
	if err := o.ReadFiles(*userData, *metaData, *netConfig, *vendorData); err != nil {
		return fail(stderr, "seed build: %v", err)
	}
	o.Label = *label
	if err := seedimg.Build(*outFile, o); err != nil {
		return fail(stderr, "seed build: %v", err)
	}
	fmt.Fprintf(stdout, "%s: %s seed image (%s)\n", *outFile, *kind, *format)
	return exitOK
}
