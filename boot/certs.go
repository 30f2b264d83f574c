package boot

import (
	"os"
	"path"
	"strings"
)

// certDirEnv is the variable Go's crypto/x509 (and OpenSSL) read for the
// directories of trusted certificates.
const certDirEnv = "SSL_CERT_DIR"

// targetCertDirs hold a CA bundle as a regular file on the distributions
// seedinit provisions: ca-certificates.crt on Debian, Ubuntu and Alpine,
// tls-ca-bundle.pem on Fedora and RHEL. The files beside it are mostly
// absolute symlinks, which resolve in the initramfs and not in the target,
// so the bundle is what counts.
var targetCertDirs = []string{"/etc/ssl/certs", "/etc/pki/ca-trust/extracted/pem", "/etc/pki/tls/certs"}

// certDirs is SSL_CERT_DIR for PID 1 in an initramfs: its own directories
// first (in case the image carries a bundle), then the target root's, so
// that https fetches (seedfrom, #include, write_files sources, phone_home,
// ssh_import_id) trust what the real system trusts. Go reads it once, at
// the first TLS handshake, which comes after the root is mounted.
func certDirs(targetDir string) string {
	dirs := append([]string(nil), targetCertDirs...)
	for _, d := range targetCertDirs {
		dirs = append(dirs, path.Join(targetDir, d))
	}
	return strings.Join(dirs, ":")
}

// trustTargetCerts sets SSL_CERT_DIR unless the kernel command line's
// environment already chose one, and returns what it set ("" if nothing).
func trustTargetCerts(targetDir string) string {
	if _, set := os.LookupEnv(certDirEnv); set {
		return ""
	}
	dirs := certDirs(targetDir)
	os.Setenv(certDirEnv, dirs)
	return dirs
}

// handoffEnv is PID 1's environment without what seedinit set for itself,
// for the real init.
func handoffEnv(ownCertDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if ownCertDir != "" && kv == certDirEnv+"="+ownCertDir {
			continue
		}
		env = append(env, kv)
	}
	return env
}
