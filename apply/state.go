package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// CloudDir is cloud-init's state directory; seedinit keeps the same layout
// so that tools and habits built on it keep working.
const CloudDir = "/var/lib/cloud"

// State is the /var/lib/cloud tree of one target for one instance.
type State struct {
	Root       *rootfs.Root
	InstanceID string
	// NewInstance is true when the instance-id differs from the one recorded
	// at the last run (or there was none): per-instance modules run again.
	NewInstance bool
	// PreviousInstanceID is the id recorded before this run, if any.
	PreviousInstanceID string
	now                func() time.Time
}

// Path joins elements under CloudDir.
func Path(elem ...string) string { return path.Join(append([]string{CloudDir}, elem...)...) }

// InstanceDir is /var/lib/cloud/instances/<id>.
func (s *State) InstanceDir(elem ...string) string {
	return path.Join(append([]string{CloudDir, "instances", s.InstanceID}, elem...)...)
}

// ValidInstanceID rejects ids that cannot be a directory name: a datasource
// is untrusted input and its id becomes a path.
func ValidInstanceID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") || len(id) > 255 {
		return fmt.Errorf("instance-id %q cannot name a directory", id)
	}
	return nil
}

// OpenState records instanceID as the current instance in root: it creates
// the directories, points /var/lib/cloud/instance at it and, when the id
// changed, keeps the old one in data/previous-instance-id. Calling it again
// for the same id changes nothing.
func OpenState(root *rootfs.Root, instanceID string, now func() time.Time) (*State, error) {
	if err := ValidInstanceID(instanceID); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	s := &State{Root: root, InstanceID: instanceID, now: now}
	prev, err := root.ReadFile(Path("data", "instance-id"))
	switch {
	case err == nil:
		s.PreviousInstanceID = strings.TrimSpace(string(prev))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read instance state: %w", err)
	}
	s.NewInstance = s.PreviousInstanceID != instanceID
	for _, d := range []string{
		Path("data"), Path("sem"), Path("scripts", "per-boot"), Path("scripts", "per-instance"),
		Path("scripts", "per-once"), Path("scripts", "vendor"), Path("seed"),
		s.InstanceDir("sem"), s.InstanceDir("scripts"), s.InstanceDir("handlers"), s.InstanceDir("data"),
	} {
		if err := root.MkdirAll(d, 0o755, rootfs.KeepOwner); err != nil {
			return nil, err
		}
	}
	if s.NewInstance {
		if s.PreviousInstanceID != "" {
			if err := root.WriteFile(Path("data", "previous-instance-id"), []byte(s.PreviousInstanceID+"\n"), 0o644, rootfs.KeepOwner); err != nil {
				return nil, err
			}
		}
		if err := root.WriteFile(Path("data", "instance-id"), []byte(instanceID+"\n"), 0o644, rootfs.KeepOwner); err != nil {
			return nil, err
		}
	}
	if err := root.Symlink(s.InstanceDir(), Path("instance")); err != nil {
		return nil, err
	}
	return s, nil
}

// semPath is where cloud-init keeps a module's semaphore: per-instance ones
// in the instance's sem/ without a suffix, per-once ones in the global sem/
// with ".once". Per-boot modules have none.
func (s *State) semPath(name string, freq Frequency) string {
	switch freq {
	case PerOnce:
		return Path("sem", name+"."+string(PerOnce))
	case PerInstance:
		return s.InstanceDir("sem", name)
	}
	return ""
}

// HasRun reports whether a semaphore for name at freq exists. Per-boot
// names never "have run".
func (s *State) HasRun(name string, freq Frequency) bool {
	p := s.semPath(name, freq)
	return p != "" && s.Root.Exists(p)
}

// MarkRun writes the semaphore for name at freq, as cloud-init does after a
// module succeeds.
func (s *State) MarkRun(name string, freq Frequency) error {
	p := s.semPath(name, freq)
	if p == "" {
		return nil
	}
	body := fmt.Sprintf("%d: %f\n", os.Getpid(), float64(s.now().UnixNano())/1e9)
	// Only its existence is read; lost in a power cut, the module runs
	// again, its own files having been made durable before.
	return s.Root.WriteMarkFile(p, []byte(body), 0o644, rootfs.KeepOwner)
}

// ClearRun removes a semaphore so the work runs again.
func (s *State) ClearRun(name string, freq Frequency) error {
	p := s.semPath(name, freq)
	if p == "" {
		return nil
	}
	return s.Root.Remove(p)
}
