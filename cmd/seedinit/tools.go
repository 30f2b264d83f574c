package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"

	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup"
)

// runNetConvert is `cloud-init devel net-convert` with the same flags, so it
// drops in where people script that.
func runNetConvert(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit net-convert", flag.ContinueOnError)
	var input, kind, outKind, outDir, distro string
	for _, n := range []string{"network-data", "p"} {
		fs.StringVar(&input, n, "", "network config file to read")
	}
	for _, n := range []string{"kind", "k"} {
		fs.StringVar(&kind, n, "", "input kind: eni, yaml, network_data.json, or a cloud's network metadata: ec2, digitalocean, vultr (these need --mac), azure-imds")
	}
	for _, n := range []string{"output-kind", "O"} {
		fs.StringVar(&outKind, n, "", "output kind: eni, netplan, networkd, sysconfig or json")
	}
	for _, n := range []string{"directory", "d"} {
		fs.StringVar(&outDir, n, "", "directory to write the files under")
	}
	for _, n := range []string{"distro", "D"} {
		fs.StringVar(&distro, n, "", "accepted for compatibility; the output kind decides the files")
	}
	var macs stringList
	for _, n := range []string{"mac", "m"} {
		fs.Var(&macs, n, "name,mac[,driver] of a NIC (repeatable)")
	}
	fs.Bool("debug", false, "accepted for compatibility")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if input == "" || kind == "" || outKind == "" || outDir == "" {
		return fail(stderr, "net-convert: --network-data, --kind, --output-kind and --directory are required")
	}
	var pairs []netup.MAC
	for _, m := range macs {
		p, err := netup.ParseMAC(m)
		if err != nil {
			return fail(stderr, "net-convert: %v", err)
		}
		pairs = append(pairs, p)
	}
	data, err := os.ReadFile(input)
	if err != nil {
		return fail(stderr, "net-convert: %v", err)
	}
	files, convErr := netup.Convert(data, kind, outKind, pairs)
	if errors.Is(convErr, netup.ErrDisabled) {
		fmt.Fprintln(stderr, "seedinit: net-convert: network configuration is disabled; nothing written")
		return exitOK
	}
	// A bad item still leaves files for the rest: write them, then report.
	if len(files) > 0 {
		if err := writeConverted(outDir, files); err != nil {
			return fail(stderr, "net-convert: %v", err)
		}
	}
	if convErr != nil {
		fmt.Fprintf(stderr, "seedinit: net-convert: %s: %v\n", input, convErr)
		if files == nil {
			return exitError
		}
		return exitRecoverable
	}
	return exitOK
}

// writeConverted writes net-convert's files under outDir (created if
// missing) through a target root there: every path is resolved as if
// outDir were "/", so neither a ".." in a rendered path nor a symlink
// already in outDir can take a write above it. A path that is not plain
// relative is refused before anything is written.
func writeConverted(outDir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		if err := netup.CheckOutputPath(n); err != nil {
			return fmt.Errorf("write under %s: %w", outDir, err)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	root, err := rootfs.Open(outDir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, n := range names {
		if err := root.MkdirAll(path.Dir(n), 0o755, rootfs.KeepOwner); err != nil {
			return fmt.Errorf("write under %s: %w", outDir, err)
		}
		if err := root.WriteFile(n, files[n], 0o644, rootfs.KeepOwner); err != nil {
			return fmt.Errorf("write under %s: %w", outDir, err)
		}
	}
	return root.Sync()
}

// runGrowpart behaves like cloud-utils' growpart: its output lines and its
// exit codes (0 grown, 1 no change, 2 error), so scripts keep working.
func runGrowpart(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit growpart", flag.ContinueOnError)
	dry := fs.Bool("dry-run", false, "say what would change, change nothing")
	fs.BoolVar(dry, "N", false, "same as --dry-run")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return disk.ExitError
	}
	_ = code
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "usage: seedinit growpart [--dry-run] DISK PARTITION-NUMBER")
		return disk.ExitError
	}
	n, err := strconv.Atoi(pos[1])
	if err != nil || n < 1 {
		fmt.Fprintf(stdout, "%s\n", disk.FailedLine(fmt.Errorf("partition number %q: want a number from 1", pos[1])))
		return disk.ExitError
	}
	res, err := disk.GrowPart(pos[0], n, *dry)
	if err != nil {
		fmt.Fprintln(stdout, disk.FailedLine(err))
		return disk.ExitError
	}
	fmt.Fprintln(stdout, res.String())
	return res.ExitCode()
}

func runResizefs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit resizefs", flag.ContinueOnError)
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fail(stderr, "resizefs: usage: seedinit resizefs MOUNTPOINT")
	}
	res, err := disk.GrowFS(pos[0])
	if err != nil {
		return fail(stderr, "resizefs: %v", err)
	}
	fmt.Fprintln(stdout, res.String())
	return exitOK
}
