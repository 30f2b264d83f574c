package kept

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

func TestSaveKeepsSeedAndDecision(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "seedinit", "seed")
	s := &seed.Seed{Datasource: "ConfigDrive", Subplatform: "config-disk (/dev/sr0)", InstanceID: "iid-1", UserData: []byte("#cloud-config\n{}\n")}
	d := &trust.Decision{Policy: "require", Parts: []trust.Finding{{Part: "user-data", Verdict: trust.Trusted, Detail: "signed"}}}
	if err := save(dir, s, d); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"datasource": "ConfigDrive\n", "subplatform": "config-disk (/dev/sr0)\n", "user-data": "#cloud-config\n{}\n"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v: the seed may hold secrets", name, fi.Mode().Perm())
		}
	}
	got, err := decisionIn(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("decision read back (-saved +read):\n%s", diff)
	}
}

// A save that fails half way leaves no decision beside a seed it was not
// made for: the old one goes before anything of the new seed is written.
func TestSaveDropsTheOldDecisionFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "seed")
	if err := save(dir, &seed.Seed{Datasource: "NoCloud", InstanceID: "iid-old"}, &trust.Decision{Policy: "require"}); err != nil {
		t.Fatal(err)
	}
	// user-data as a folder: FetchToDir cannot write the new seed's.
	os.Remove(filepath.Join(dir, "user-data"))
	os.Mkdir(filepath.Join(dir, "user-data"), 0o700)
	os.WriteFile(filepath.Join(dir, "user-data", "x"), nil, 0o600)
	if err := save(dir, &seed.Seed{Datasource: "NoCloud", InstanceID: "iid-new", UserData: []byte("#cloud-config\n")}, &trust.Decision{Policy: "warn"}); err == nil {
		t.Fatal("the save over a folder succeeded")
	}
	if d, err := decisionIn(dir, dir); d != nil || err != nil {
		t.Fatalf("a decision stayed beside a seed that was not all written: %+v, %v", d, err)
	}
}

// Only the keeping folder's record counts: one in a seed directory
// someone hands over is not taken for a decision.
func TestDecisionOnlyInTheKeepingFolder(t *testing.T) {
	handed, keeping := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(handed, decisionFile), []byte(`{"policy":"require","parts":[{"part":"user-data","verdict":"trusted"}]}`), 0o600)
	if d, err := decisionIn(handed, keeping); d != nil || err != nil {
		t.Errorf("a record outside the keeping folder was taken: %+v, %v", d, err)
	}
	// The same folder by another name is the same folder.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(handed, link)
	if d, err := decisionIn(link, handed); d == nil || err != nil {
		t.Errorf("the keeping folder by a symlink was not itself: %+v, %v", d, err)
	}
	os.WriteFile(filepath.Join(handed, decisionFile), []byte(`{"policy":`), 0o600)
	if _, err := decisionIn(handed, handed); err == nil || !strings.Contains(err.Error(), decisionFile) {
		t.Errorf("an unreadable record: %v, want an error naming %s", err, decisionFile)
	}
}
