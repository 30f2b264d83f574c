package boot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/seed"
)

// KexecSpec names the kernel to boot into instead of handing off: for
// bare-metal machines whose firmware boots a small provisioning kernel.
type KexecSpec struct {
	Kernel, Initrd string // a path in the booted root, or an http(s) URL
	Cmdline        string
	KernelSHA256   string // required for URLs: a boot must not run what it cannot verify
	InitrdSHA256   string
}

// ParseKexec reads seedinit.kexec= values:
// kernel=PATH|URL;initrd=PATH|URL;cmdline=...;sha256=HEX;initrd_sha256=HEX
// (the cmdline last, it may hold ';' only there: everything after
// "cmdline=" is the command line).
func ParseKexec(v string) (KexecSpec, error) {
	var k KexecSpec
	rest := v
	for rest != "" {
		var item string
		if strings.HasPrefix(rest, "cmdline=") {
			item, rest = rest, ""
		} else {
			item, rest, _ = strings.Cut(rest, ";")
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			return k, fmt.Errorf("seedinit.kexec: %q is not key=value", item)
		}
		switch key {
		case "kernel":
			k.Kernel = val
		case "initrd":
			k.Initrd = val
		case "cmdline":
			k.Cmdline = val
		case "sha256", "kernel_sha256":
			k.KernelSHA256 = strings.ToLower(val)
		case "initrd_sha256":
			k.InitrdSHA256 = strings.ToLower(val)
		default:
			return k, fmt.Errorf("seedinit.kexec: unknown key %q", key)
		}
	}
	if k.Kernel == "" {
		return k, errors.New("seedinit.kexec: no kernel=")
	}
	for _, p := range [][2]string{{k.Kernel, k.KernelSHA256}, {k.Initrd, k.InitrdSHA256}} {
		if isURL(p[0]) && p[1] == "" {
			return k, fmt.Errorf("seedinit.kexec: %s is fetched over the network and needs its sha256", p[0])
		}
	}
	return k, nil
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// maxKexecImage caps a downloaded kernel or initrd.
const maxKexecImage = 512 << 20

// loadImage reads a path inside root or downloads a URL into a memfd, and
// checks its sha256 when one is given.
func loadImage(ctx context.Context, root, src, sum string) (*os.File, error) {
	var r io.Reader
	if isURL(src) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %s", seed.RedactURL(src), seed.RedactError(err, src))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %s", seed.RedactURL(src), seed.RedactError(err, src))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch %s: %s", seed.RedactURL(src), resp.Status)
		}
		r = io.LimitReader(resp.Body, maxKexecImage+1)
	} else {
		f, err := os.Open(filepath.Join(root, filepath.Clean("/"+src)))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = io.LimitReader(f, maxKexecImage+1)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %s", seed.RedactURL(src), seed.RedactError(err, src))
	}
	if n > maxKexecImage {
		return nil, fmt.Errorf("read %s: larger than %d MiB", seed.RedactURL(src), maxKexecImage>>20)
	}
	if sum != "" {
		got := sha256.Sum256(buf.Bytes())
		if hex.EncodeToString(got[:]) != sum {
			return nil, fmt.Errorf("%s: sha256 %x does not match %s", seed.RedactURL(src), got, sum)
		}
	}
	fd, err := unix.MemfdCreate("seedinit-kexec", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "memfd:seedinit-kexec")
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Kexec loads the spec's kernel with kexec_file_load and reboots into it,
// calling beforeReboot (when not nil) once the kernel is loaded: the
// target's filesystems are read up to then and released after. It returns
// only when that fails; the caller then hands off as usual.
func Kexec(root string, k KexecSpec, beforeReboot func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kernel, err := loadImage(ctx, root, k.Kernel, k.KernelSHA256)
	if err != nil {
		return fmt.Errorf("kexec: kernel: %w", err)
	}
	defer kernel.Close()
	initrdFd, flags := -1, unix.KEXEC_FILE_NO_INITRAMFS
	if k.Initrd != "" {
		initrd, err := loadImage(ctx, root, k.Initrd, k.InitrdSHA256)
		if err != nil {
			return fmt.Errorf("kexec: initrd: %w", err)
		}
		defer initrd.Close()
		initrdFd, flags = int(initrd.Fd()), 0
	}
	if err := kexecFileLoad(int(kernel.Fd()), initrdFd, k.Cmdline, flags); err != nil {
		return fmt.Errorf("kexec: load %s: %w", seed.RedactURL(k.Kernel), err)
	}
	if beforeReboot != nil {
		beforeReboot()
	}
	syncBounded(rebootSyncWait)
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_KEXEC); err != nil {
		return fmt.Errorf("kexec: reboot into %s: %w", seed.RedactURL(k.Kernel), err)
	}
	return nil
}
