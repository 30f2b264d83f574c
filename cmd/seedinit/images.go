package main

import (
	"bytes"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedinit/seedinit/images/initramfs"
	"github.com/seedinit/seedinit/images/seedimg"
	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runInitramfs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "build" {
		return fail(stderr, "initramfs: usage: seedinit initramfs build --modules-root DIR --kernel-release KVER -o FILE [--add SRC:DST]... [--trust-key FILE]... [--trust-policy off|warn|require] [--no-init] [--compress gzip|none]")
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
	var adds, trustKeys stringList
	fs.Var(&adds, "add", "extra file SRC:DST (repeatable)")
	fs.Var(&trustKeys, "trust-key", "a file of trusted Ed25519 public keys for seed signatures (authorized_keys lines; repeatable)")
	trustPolicy := fs.String("trust-policy", "", "seed signatures' policy baked in: off, warn or require (seedinit.trust= may only raise it)")
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
	trustFiles, err := trustExtras(trustKeys, *trustPolicy)
	if err != nil {
		return fail(stderr, "initramfs build: %v", err)
	}
	o.Extra = append(o.Extra, trustFiles...)
	var buf bytes.Buffer
	rep, err := initramfs.Build(&buf, o)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if err := atomicfile.Write(*outFile, buf.Bytes(), 0o644); err != nil {
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

// runSeed is `seedinit seed build`: NoCloud and config-drive images as
// ISO9660 or FAT, the Go replacement for cloud-localds and genisoimage.
func runSeed(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "sign" {
		return runSeedSign(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "build" {
		return fail(stderr, "seed: usage: seedinit seed build --kind nocloud|configdrive|ovf --format iso|vfat|xml --meta-data F [--user-data F] [--network-config F] [--vendor-data F] [--file SRC:/PATH]... [--bootstrap DIR] [--sign-key KEY [BINDINGS]] -o OUT\n       seedinit seed sign --key KEY [BINDINGS] DIR\n  BINDINGS: [--system-uuid U]... [--mac M]... [--instance-id ID]... [--not-before T] [--not-after T | --valid-for D]")
	}
	fs := flag.NewFlagSet("seedinit seed build", flag.ContinueOnError)
	kind := fs.String("kind", "nocloud", "nocloud (label cidata), configdrive (label config-2) or ovf (an OVF environment, ovf-env.xml, label OVFENV)")
	format := fs.String("format", "iso", "iso or vfat; xml for the OVF environment alone (--kind ovf)")
	userData := fs.String("user-data", "", "user-data file")
	metaData := fs.String("meta-data", "", "meta-data file (YAML or JSON)")
	netConfig := fs.String("network-config", "", "network config file (network_data.json for a config drive)")
	vendorData := fs.String("vendor-data", "", "vendor-data file")
	label := fs.String("label", "", "volume label (default: cidata or config-2)")
	bootstrapTree := fs.String("bootstrap", "", "a directory to carry as the seed's bootstrap tree (bootstrap/ on the disk), its files' modes and owners kept (owners when built as root)")
	var injected stringList
	fs.Var(&injected, "file", "inject a file into the target (config drive only): SRC:PATH, the local file SRC written at PATH on the instance's first boot (repeatable)")
	signKey := fs.String("sign-key", "", "sign the seed with this Ed25519 private key: a seed-manifest and its seed-manifest.sig beside the parts (see seedinit seed sign)")
	bind := manifestFlags(fs)
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
	for _, spec := range injected {
		i := strings.LastIndexByte(spec, ':')
		if i <= 0 || !strings.HasPrefix(spec[i+1:], "/") {
			return fail(stderr, "seed build: --file %q: want SRC:/PATH", spec)
		}
		b, err := os.ReadFile(spec[:i])
		if err != nil {
			return fail(stderr, "seed build: --file: %v", err)
		}
		o.Files = append(o.Files, seed.InjectedFile{Path: spec[i+1:], Content: b})
	}
	if *bootstrapTree != "" {
		if o.Bootstrap, err = seedimg.ReadBootstrapDir(*bootstrapTree); err != nil {
			return fail(stderr, "seed build: %v", err)
		}
	}
	if *signKey != "" {
		priv, err := readSigningKey(*signKey)
		if err != nil {
			return fail(stderr, "seed build: %v", err)
		}
		m, err := bind.manifest(time.Now())
		if err != nil {
			return fail(stderr, "seed build: %v", err)
		}
		o.Sign = func(in seedimg.SignInput) ([]byte, []byte, error) { return signManifest(priv, m, in) }
	} else if bind.given() {
		return fail(stderr, "seed build: the bindings (--system-uuid, --mac, --instance-id, --not-before, --not-after, --valid-for) are for --sign-key")
	}
	if err := seedimg.Build(*outFile, o); err != nil {
		return fail(stderr, "seed build: %v", err)
	}
	fmt.Fprintf(stdout, "%s: %s seed image (%s)\n", *outFile, *kind, *format)
	return exitOK
}

// readSigningKey reads an unencrypted Ed25519 private key.
func readSigningKey(path string) (ed25519.PrivateKey, error) { return trust.ReadSigningKey(path) }

// trustExtras checks the trusted keys (every line an Ed25519 key) and the
// policy, and makes them the initramfs's files.
func trustExtras(keyFiles []string, policy string) ([]initramfs.Extra, error) {
	var out []initramfs.Extra
	if len(keyFiles) > 0 {
		var keys bytes.Buffer
		for _, f := range keyFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("--trust-key: %w", err)
			}
			parsed, err := trust.ParseKeys(data, f)
			if err != nil {
				return nil, fmt.Errorf("--trust-key: %w", err)
			}
			for _, k := range parsed {
				keys.Write(sshkey.MarshalAuthorizedKey(k, "from "+filepath.Base(f)))
			}
		}
		if keys.Len() == 0 {
			return nil, fmt.Errorf("--trust-key: no key in %s", strings.Join(keyFiles, ", "))
		}
		out = append(out, initramfs.Extra{Dst: trust.KeysFile, Data: keys.Bytes()})
	}
	if policy != "" {
		p, err := trust.ParsePolicy(policy)
		if err != nil {
			return nil, fmt.Errorf("--trust-policy: %w", err)
		}
		out = append(out, initramfs.Extra{Dst: trust.PolicyFile, Data: []byte(p.String() + "\n")})
	}
	return out, nil
}
