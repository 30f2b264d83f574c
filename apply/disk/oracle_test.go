package disk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "%s is not installed (Debian: cloud-guest-utils for growpart, fdisk for sfdisk, gdisk for sgdisk): %v", tool, err)
		}
	}
}

// sfdiskDump is `sfdisk --dump` with the image's name taken out, so two
// images can be compared.
func sfdiskDump(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("sfdisk", "--dump", path).Output()
	if err != nil {
		t.Fatalf("sfdisk --dump %s: %v", path, err)
	}
	return strings.ReplaceAll(string(out), path, "IMG")
}

func copyImage(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "oracle.img")
	// cp keeps the copy sparse.
	if out, err := exec.Command("cp", "--sparse=always", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// TestGrowMatchesGrowpart runs cloud-utils' growpart (which drives sfdisk)
// and GrowPart on copies of the same image and compares what they print,
// their exit codes and the resulting tables.
func TestGrowMatchesGrowpart(t *testing.T) {
	needTools(t, "growpart", "sfdisk", "cp")
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		grow    int64
		partnum int
		dryRun  bool
	}{
		{
			name: "gpt last partition", grow: 300 * mib, partnum: 2,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}})
			},
		},
		{
			name: "gpt dry run", grow: 300 * mib, partnum: 2, dryRun: true,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}})
			},
		},
		{
			name: "gpt full", grow: 100 * mib, partnum: 1,
			make: func(t *testing.T, p string) { writeGPT(t, p, 100*mib, 512, []testPart{{2048, 204766, "root"}}) },
		},
		{
			name: "gpt blocked", grow: 200 * mib, partnum: 1,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "root"}, {43008, 104447, "data"}})
			},
		},
		{
			name: "gpt gap before the neighbour", grow: 100 * mib, partnum: 1,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "root"}, {100000, 104447, "data"}})
			},
		},
		{
			name: "gpt below the fudge", grow: 100*mib + 512*kib, partnum: 1,
			make: func(t *testing.T, p string) { writeGPT(t, p, 100*mib, 512, []testPart{{2048, 204766, "root"}}) },
		},
		// A damaged copy, with room to grow inside the disk (growpart
		// cannot find a damaged primary's backup once the disk grew).
		{
			name: "gpt primary header CRC bad", grow: 100 * mib, partnum: 2,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}})
				xorAt(func(int64) int64 { return 512 + 16 })(t, p)
			},
		},
		{
			name: "gpt primary entries CRC bad", grow: 100 * mib, partnum: 2,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}})
				xorAt(func(int64) int64 { return 2*512 + 128 + 56 })(t, p)
			},
		},
		{
			name: "gpt backup header CRC bad", grow: 100 * mib, partnum: 2,
			make: func(t *testing.T, p string) {
				writeGPT(t, p, 100*mib, 512, []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}})
				xorAt(func(n int64) int64 { return (n-1)*512 + 16 })(t, p)
			},
		},
		{
			name: "dos primary", grow: 300 * mib, partnum: 2,
			make: func(t *testing.T, p string) {
				writeMBR(t, p, 100*mib, []mbrPart{{0x83, 2048, 20480}, {0x83, 22528, 40960}}, nil)
			},
		},
		{
			name: "dos primary blocked by the extended", grow: 300 * mib, partnum: 1,
			make: func(t *testing.T, p string) {
				writeMBR(t, p, 100*mib, []mbrPart{{0x83, 2048, 20480}, {0x05, 22528, 80000}}, []mbrPart{{0x83, 24576, 20480}})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := tempImage(t)
			tt.make(t, ours)
			truncate(t, ours, tt.grow)
			theirs := copyImage(t, ours)

			args := []string{theirs, "1"}
			args[1] = string(rune('0' + tt.partnum))
			if tt.dryRun {
				args = append([]string{"--dry-run"}, args...)
			}
			cmd := exec.Command("growpart", args...)
			cmd.Env = append(os.Environ(), "LANG=C")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code != 1 {
				t.Fatalf("growpart %v: %v (stdout %s)", args, err, stdout.String())
			}
			res, err := GrowPart(ours, tt.partnum, tt.dryRun)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimSpace(stdout.String()), res.String()); diff != "" {
				t.Errorf("output (-growpart +ours):\n%s", diff)
			}
			if res.ExitCode() != code {
				t.Errorf("exit code %d, growpart's %d", res.ExitCode(), code)
			}
			theirDump, ourDump := sfdiskDump(t, theirs), sfdiskDump(t, ours)
			if !res.Changed && !tt.dryRun && strings.HasPrefix(tt.name, "gpt") {
				// Where the partition cannot grow, growpart leaves the backup
				// GPT where it was and we move it to the disk's end: only
				// last-lba may differ.
				theirDump, ourDump = dropLastLBA(theirDump), dropLastLBA(ourDump)
			}
			if diff := cmp.Diff(theirDump, ourDump); diff != "" {
				t.Errorf("table (-growpart +ours):\n%s", diff)
			}
			if _, err := exec.LookPath("sgdisk"); err == nil && strings.HasPrefix(tt.name, "gpt") && !tt.dryRun {
				out, err := exec.Command("sgdisk", "-v", ours).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "No problems found") {
					t.Errorf("sgdisk -v: %v\n%s", err, out)
				}
				if res.Changed {
					// Both headers and the entries, byte for byte. The
					// first sector is the MBR, whose CHS fields sfdisk
					// writes where the test's protective MBR has none.
					ourBackup, theirBackup := sgdiskBackup(t, ours), sgdiskBackup(t, theirs)
					if !bytes.Equal(ourBackup[512:], theirBackup[512:]) {
						t.Errorf("sgdisk --backup of the two tables differ")
					}
				}
			}
		})
	}
}

// sgdiskBackup is `sgdisk --backup`'s file: the MBR, the primary and backup
// headers and the entries.
func sgdiskBackup(t *testing.T, path string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "backup")
	if out, err := exec.Command("sgdisk", "--backup="+file, path).CombinedOutput(); err != nil {
		t.Fatalf("sgdisk --backup %s: %v\n%s", path, err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dropLastLBA(dump string) string {
	var keep []string
	for _, l := range strings.Split(dump, "\n") {
		if !strings.HasPrefix(l, "last-lba:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
