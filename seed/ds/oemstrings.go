package ds

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SMBIOS type 11 "OEM strings": free-form strings a hypervisor puts in the
// firmware's tables (QEMU's -smbios type=11,value=..., libvirt's
// <oemStrings>), read by Linux from /sys/firmware/dmi/entries/11-N/raw
// (CONFIG_DMI_SYSFS). Two conventions are read:
//
//   - libvirt's: an application's string starts with its name and a
//     colon; cloud-init's NoCloud arguments, "cloud-init:ds=nocloud;...",
//     or bare "ds=nocloud;..." as in the system serial, are NoCloud's;
//   - systemd's credentials (smbios-type-11(7)):
//     "io.systemd.credential:NAME=VALUE" and
//     "io.systemd.credential.binary:NAME=BASE64". The credentials named
//     CredentialPrefix + a NoCloud file name are a NoCloud seed.

// CredentialPrefix names the credentials that carry a seed: the NoCloud
// file names after it (cloud-init.meta-data, cloud-init.user-data,
// cloud-init.vendor-data, cloud-init.network-config).
const CredentialPrefix = "cloud-init."

// OEMStringer is a DMI that can also read the OEM strings.
type OEMStringer interface {
	OEMStrings() []string
}

// OEMStrings returns the machine's SMBIOS OEM strings, none when DMI
// cannot read them.
func (e *Env) OEMStrings() []string {
	if e == nil || e.DMI == nil {
		return nil
	}
	if o, ok := e.DMI.(OEMStringer); ok {
		return o.OEMStrings()
	}
	return nil
}

// Limits on what the firmware's tables may make seedinit read: an SMBIOS
// structure's strings are at most 64 KiB in all (QEMU refuses more), and
// no machine has hundreds of type 11 structures.
const (
	maxOEMEntryBytes = 64 << 10
	maxOEMEntries    = 64
)

// readOEMStrings reads the strings of every type 11 structure under dir
// (/sys/firmware/dmi/entries), in the tables' order.
func readOEMStrings(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "11-"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 {
				nums = append(nums, i)
			}
		}
	}
	slices.Sort(nums)
	if len(nums) > maxOEMEntries {
		nums = nums[:maxOEMEntries]
	}
	var out []string
	var errs []error
	for _, n := range nums {
		p := filepath.Join(dir, "11-"+strconv.Itoa(n), "raw")
		raw, err := readCapped(p, maxOEMEntryBytes)
		if err == nil {
			var strs []string
			strs, err = parseOEMStrings(raw)
			out = append(out, strs...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return out, errors.Join(errs...)
}

func readCapped(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// parseOEMStrings reads one SMBIOS type 11 structure as the kernel gives
// it: the formatted part (type 11, its length, a handle, the number of
// strings) and then the strings, each ending in NUL, the set in a second
// NUL.
func parseOEMStrings(raw []byte) ([]string, error) {
	if len(raw) < 5 {
		return nil, errors.New("not an SMBIOS structure: too short")
	}
	if raw[0] != 11 {
		return nil, fmt.Errorf("SMBIOS structure of type %d, not 11 (OEM strings)", raw[0])
	}
	formatted := int(raw[1])
	if formatted < 5 || formatted > len(raw) {
		return nil, fmt.Errorf("SMBIOS structure length %d out of range", formatted)
	}
	count := int(raw[4])
	rest := raw[formatted:]
	out := make([]string, 0, count)
	for len(out) < count {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return out, fmt.Errorf("string %d of %d has no end", len(out)+1, count)
		}
		if i == 0 {
			return out, fmt.Errorf("%d strings where the structure says %d", len(out), count)
		}
		out = append(out, string(rest[:i]))
		rest = rest[i+1:]
	}
	return out, nil
}

// oemNoCloudArgs returns the NoCloud arguments of the first OEM string
// that holds them ("ds=nocloud;..." bare or after "cloud-init:").
func oemNoCloudArgs(strs []string) (noCloudArgs, int, bool) {
	for i, s := range strs {
		s = strings.TrimPrefix(s, "cloud-init:")
		if !strings.HasPrefix(s, "ds=") {
			continue
		}
		if a, ok := parseNoCloudArgs(s); ok {
			return a, i + 1, true
		}
	}
	return noCloudArgs{}, 0, false
}

// Credential is a systemd credential from an OEM string.
type Credential struct {
	Name  string
	Value []byte
}

// oemCredentials returns the systemd credentials among the OEM strings; a
// credential given twice keeps its first value, as systemd does. The
// errors name the strings that look like credentials and are not.
func oemCredentials(strs []string) ([]Credential, []error) {
	var out []Credential
	var errs []error
	seen := map[string]bool{}
	for i, s := range strs {
		var binary bool
		var rest string
		if r, ok := strings.CutPrefix(s, "io.systemd.credential.binary:"); ok {
			binary, rest = true, r
		} else if r, ok := strings.CutPrefix(s, "io.systemd.credential:"); ok {
			rest = r
		} else {
			continue
		}
		name, value, ok := strings.Cut(rest, "=")
		if !ok || !validCredentialName(name) {
			errs = append(errs, fmt.Errorf("OEM string %d: not NAME=VALUE with a valid credential name", i+1))
			continue
		}
		v := []byte(value)
		if binary {
			var err error
			if v, err = base64.StdEncoding.DecodeString(value); err != nil {
				errs = append(errs, fmt.Errorf("OEM string %d: credential %s: not base64: %w", i+1, name, err))
				continue
			}
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, Credential{Name: name, Value: v})
	}
	return out, errs
}

// validCredentialName is systemd's rule: a valid file name (no slash, not
// "." or "..", at most 255 bytes) without control characters.
func validCredentialName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 255 || strings.ContainsRune(name, '/') {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// mapTree is a seed directory held in memory: file name to content.
type mapTree map[string][]byte

// newCredentialTree is the seed credentials as a seed directory: the
// file meta-data is the credential cloud-init.meta-data.
func newCredentialTree(creds []Credential) mapTree {
	t := mapTree{}
	for _, c := range creds {
		if file, ok := strings.CutPrefix(c.Name, CredentialPrefix); ok {
			t[file] = c.Value
		}
	}
	return t
}

func (t mapTree) has(name string) bool {
	_, ok := t[name]
	return ok
}

func (t mapTree) ReadFile(name string) ([]byte, error) {
	if b, ok := t[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
}

func (t mapTree) ReadDir(string) ([]string, error) {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}
