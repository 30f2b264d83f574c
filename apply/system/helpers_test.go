package system

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// config decodes a cloud-config written in YAML.
func config(t *testing.T, text string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatalf("load %q: %v", text, err)
	}
	if v == nil {
		return apply.Config{}
	}
	return apply.Config(v.(map[string]any))
}

// writeTree lays files into dir; a name ending in "*" is an executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kernelSystem is a FakeSystem that also offers the kernel capabilities.
type kernelSystem struct {
	*applytest.FakeSystem
	mu       sync.Mutex
	random   []byte
	rejected []netip.Addr
}

func (k *kernelSystem) AddRandom(data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.random = append(k.random, data...)
	return nil
}

func (k *kernelSystem) RejectRoute(ctx context.Context, dst netip.Addr) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rejected = append(k.rejected, dst)
	return nil
}

// oracle runs a Python snippet with Debian's cloud-init importable, or
// skips the test.
func oracle(t *testing.T, script string, args ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "no /usr/bin/python3: install Debian's cloud-init package to compare with cloud-init")
	}
	if err := exec.Command(py, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skip(t, "cloudinit is not importable by /usr/bin/python3: install Debian's cloud-init package to compare")
	}
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("cloud-init oracle: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("cloud-init oracle: %v", err)
	}
	return string(out)
}

// withoutComments drops the comment lines at the top of a rendered file,
// which are seedinit's own words rather than cloud-init's.
func withoutComments(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# pools") && !strings.HasPrefix(l, "# servers") && !strings.HasPrefix(l, "# Servers") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
