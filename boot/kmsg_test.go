package boot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The kernel rate-limits /dev/kmsg's writers by default: 20 of PID 1's 74
// lines reached dmesg. PID 1 turns the limit off while it logs, puts back
// what was there at the handoff, and says what the kernel log keeps when
// it cannot change it.
func TestKeepAllKmsg(t *testing.T) {
	dir := t.TempDir()
	old := printkDevkmsg
	t.Cleanup(func() { printkDevkmsg = old })
	for _, tc := range []struct {
		name, was, during, after, note string
	}{
		{"rate-limited, as by default", "ratelimit\n", "on", "ratelimit", ""},
		{"on already", "on\n", "on", "on", ""},
		{"off", "off\n", "off", "off", "keeps none"},
		{"cannot be read", "", "", "", "only 10 of seedinit's lines in 5 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			printkDevkmsg = filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.was != "" {
				if err := os.WriteFile(printkDevkmsg, []byte(tc.was), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			restore, note := keepAllKmsg()
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want one saying %q", note, tc.note)
			}
			read := func() string { b, _ := os.ReadFile(printkDevkmsg); return strings.TrimSpace(string(b)) }
			if got := read(); got != tc.during {
				t.Errorf("while PID 1 logs: %q, want %q", got, tc.during)
			}
			if err := restore(); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != tc.after {
				t.Errorf("after the handoff: %q, want %q", got, tc.after)
			}
		})
	}
}

// A setting locked by printk.devkmsg= on the command line refuses the
// write: the note says so, and nothing is put back.
func TestKeepAllKmsgLocked(t *testing.T) {
	old := printkDevkmsg
	t.Cleanup(func() { printkDevkmsg = old })
	// A file that reads and refuses every write, root's too, as the
	// locked sysctl does.
	printkDevkmsg = "/proc/self/stat"
	restore, note := keepAllKmsg()
	if !strings.Contains(note, "locks it") {
		t.Errorf("note %q, want one saying the setting is locked", note)
	}
	if err := restore(); err != nil {
		t.Errorf("restore after a refused change: %v", err)
	}
}
