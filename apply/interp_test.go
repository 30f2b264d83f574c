package apply

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"

	"github.com/seedinit/seedinit/internal/testenv"
)

// elfWithInterp builds the smallest 64-bit little-endian ELF header and
// program header table the kernel would read: one PT_INTERP naming
// loader, or none when loader is "".
func elfWithInterp(loader string) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF")
	hdr[4], hdr[5], hdr[6] = 2, 1, 1 // ELFCLASS64, ELFDATA2LSB, EV_CURRENT
	le.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	le.PutUint16(hdr[18:], uint16(elf.EM_X86_64))
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[32:], 64) // e_phoff
	le.PutUint16(hdr[52:], 64) // e_ehsize
	le.PutUint16(hdr[54:], 56) // e_phentsize
	if loader != "" {
		le.PutUint16(hdr[56:], 1) // e_phnum
	}
	b.Write(hdr)
	if loader != "" {
		ph := make([]byte, 56)
		le.PutUint32(ph[0:], uint32(elf.PT_INTERP))
		le.PutUint64(ph[8:], 64+56)                  // p_offset
		le.PutUint64(ph[32:], uint64(len(loader)+1)) // p_filesz
		b.Write(ph)
		b.WriteString(loader + "\x00")
	}
	return b.Bytes()
}

// makeRoot writes files (path: content, mode) into a fresh root; a
// content of "->x" is a symlink to x.
func makeRoot(t *testing.T, files map[string]string, modes map[string]os.FileMode) *rootfs.Root {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if dest, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(dest, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode, ok := modes[name]
		if !ok {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// What the target lacks to start a command is told apart from what is
// wrong with the command: the first is a skip naming the script and the
// missing interpreter or loader, the second no skip.
func TestCheckInterpreters(t *testing.T) {
	const loader = "/lib64/ld-linux-x86-64.so.2"
	tests := []struct {
		name  string
		files map[string]string
		modes map[string]os.FileMode
		prog  string
		dir   string
		env   []string
		// skip lists what the skip's message must name; nil: no skip.
		skip []string
		// fails is a non-skip error the message must hold ("": nil).
		fails string
	}{
		{
			name:  "no /bin/sh",
			files: map[string]string{"s/runcmd": "#!/bin/sh\necho hi\n"},
			prog:  "/s/runcmd",
			skip:  []string{"it names the interpreter /bin/sh on its #! line, which does not exist in target"},
		},
		{
			name:  "shell present",
			files: map[string]string{"s/runcmd": "#!/bin/sh\n", "bin/sh": "->busybox", "bin/busybox": string(elfWithInterp(""))},
			prog:  "/s/runcmd",
		},
		{
			name:  "interpreter not executable",
			files: map[string]string{"s/x": "#! /bin/sh -e\n", "bin/sh": "#!/x\n"},
			modes: map[string]os.FileMode{"bin/sh": 0o644},
			prog:  "/s/x",
			skip:  []string{"/bin/sh", "which is not executable"},
		},
		{
			name:  "interpreter is a directory",
			files: map[string]string{"s/x": "#!/bin\n", "bin/true": "x"},
			prog:  "/s/x",
			skip:  []string{"/bin", "is not a regular file"},
		},
		{
			name:  "absolute symlink resolved inside the target",
			files: map[string]string{"s/x": "#!/bin/sh\n", "bin/sh": "->/usr/bin/dash", "usr/bin/dash": string(elfWithInterp(""))},
			prog:  "/s/x",
		},
		{
			name:  "dangling symlink",
			files: map[string]string{"s/x": "#!/bin/sh\n", "bin/sh": "->/usr/bin/dash"},
			prog:  "/s/x",
			skip:  []string{"/bin/sh", "does not exist"},
		},
		{
			name:  "interpreter's own interpreter missing",
			files: map[string]string{"s/x": "#!/opt/wrap\n", "opt/wrap": "#!/bin/bash\n"},
			prog:  "/s/x",
			skip:  []string{"its interpreter /opt/wrap names the interpreter /bin/bash"},
		},
		{
			name:  "env and a program the PATH lacks",
			files: map[string]string{"s/x": "#!/usr/bin/env python3\n", "usr/bin/env": string(elfWithInterp(""))},
			prog:  "/s/x",
			skip:  []string{"it runs the interpreter python3 through /usr/bin/env", "python3 is on no directory of the PATH"},
		},
		{
			name:  "env and a program on the PATH",
			files: map[string]string{"s/x": "#!/usr/bin/env python3\n", "usr/bin/env": string(elfWithInterp("")), "usr/local/bin/python3": "->/usr/bin/env"},
			prog:  "/s/x",
		},
		{
			name:  "env and the command's own PATH",
			files: map[string]string{"s/x": "#!/usr/bin/env tool\n", "usr/bin/env": string(elfWithInterp("")), "usr/bin/tool": "x"},
			env:   []string{"PATH=/opt/bin"},
			prog:  "/s/x",
			skip:  []string{"tool", "PATH"},
		},
		{
			name:  "env with options is not second-guessed",
			files: map[string]string{"s/x": "#!/usr/bin/env -S python3 -u\n", "usr/bin/env": string(elfWithInterp(""))},
			prog:  "/s/x",
		},
		{
			name:  "relative interpreter from the working directory",
			files: map[string]string{"s/x": "#!tools/sh\n", "work/tools/sh": "x"},
			prog:  "/s/x",
			dir:   "/work",
		},
		{
			name:  "dynamic ELF without its loader",
			files: map[string]string{"usr/bin/tool": string(elfWithInterp(loader))},
			prog:  "/usr/bin/tool",
			skip:  []string{"it needs the program loader " + loader + ", which does not exist"},
		},
		{
			name:  "script whose interpreter is a dynamic ELF without its loader",
			files: map[string]string{"s/x": "#!/bin/sh\n", "bin/sh": string(elfWithInterp(loader))},
			prog:  "/s/x",
			skip:  []string{"its interpreter /bin/sh needs the program loader " + loader},
		},
		{
			name:  "dynamic ELF with its loader",
			files: map[string]string{"usr/bin/tool": string(elfWithInterp(loader)), "lib64/ld-linux-x86-64.so.2": "->/lib/ld.so", "lib/ld.so": "x"},
			prog:  "/usr/bin/tool",
		},
		{
			name:  "static ELF",
			files: map[string]string{"bin/busybox": string(elfWithInterp(""))},
			prog:  "/bin/busybox",
		},
		{
			name:  "DOS line endings are the script's fault",
			files: map[string]string{"s/x": "#!/bin/sh\r\necho\r\n", "bin/sh": "x"},
			prog:  "/s/x",
			fails: "carriage return",
		},
		{
			name:  "no #! line: left to exec",
			files: map[string]string{"s/x": "echo hi\n"},
			prog:  "/s/x",
		},
		{
			name:  "empty #! line: left to exec",
			files: map[string]string{"s/x": "#!\n"},
			prog:  "/s/x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := makeRoot(t, tt.files, tt.modes)
			err := checkInterpreters(root, tt.prog, tt.dir, pathDirs(tt.env))
			switch {
			case tt.skip != nil:
				if !errors.Is(err, ErrSkipped) {
					t.Fatalf("checkInterpreters = %v, want a skip", err)
				}
				for _, want := range tt.skip {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("skip %q does not name %q", err, want)
					}
				}
			case tt.fails != "":
				if err == nil || errors.Is(err, ErrSkipped) || !strings.Contains(err.Error(), tt.fails) {
					t.Errorf("checkInterpreters = %v, want a failure saying %q", err, tt.fails)
				}
			case err != nil:
				t.Errorf("checkInterpreters = %v, want nil", err)
			}
		})
	}
}

// The PT_INTERP reader agrees with debug/elf on real programs and on the
// synthetic ones the tests use.
func TestReadELFInterpreterMatchesDebugElf(t *testing.T) {
	files := map[string][]byte{
		"synthetic dynamic": elfWithInterp("/lib/ld-musl-x86_64.so.1"),
		"synthetic static":  elfWithInterp(""),
	}
	for _, p := range []string{"/bin/true", "/bin/busybox", "/usr/bin/env"} {
		if b, err := os.ReadFile(p); err == nil {
			files[p] = b
		}
	}
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					raw := make([]byte, p.Filesz)
					p.ReadAt(raw, 0)
					want = strings.TrimRight(string(raw), "\x00")
					break
				}
			}
			if got := readELFInterpreter(bytes.NewReader(b)); got != want {
				t.Errorf("readELFInterpreter = %q, debug/elf says %q", got, want)
			}
		})
	}
}

func FuzzReadELFInterpreter(f *testing.F) {
	f.Add(elfWithInterp("/lib64/ld-linux-x86-64.so.2"))
	f.Add(elfWithInterp(""))
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := readELFInterpreter(bytes.NewReader(b))
		if len(got) > pathMax || strings.ContainsRune(got, 0) {
			t.Errorf("readELFInterpreter = %q", got)
		}
	})
}

func FuzzParseShebang(f *testing.F) {
	f.Add([]byte("#!/bin/sh\n"))
	f.Add([]byte("#! /usr/bin/env  python3 -u \t\nrest"))
	f.Add([]byte("#!\t/bin/sh\t-e"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !bytes.HasPrefix(b, []byte("#!")) {
			return
		}
		interp, arg := parseShebang(b)
		if strings.ContainsAny(interp, " \t\n\x00") || strings.Contains(arg, "\n") {
			t.Errorf("parseShebang(%q) = %q, %q", b, interp, arg)
		}
	})
}

// HostSystem.Run reports a command whose interpreter or loader the target
// lacks as skipped, and runs the ones it can: a script that runs and exits
// non-zero is a failure, not a skip.
func TestHostRunSkipsWhatTheTargetCannotStart(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "running a command in another root needs chroot, so root")
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		testenv.Skip(t, "needs /bin/busybox (busybox-static) for a shell inside the test root")
	}
	if readELFInterpreter(bytes.NewReader(busybox)) != "" {
		testenv.Skip(t, "/bin/busybox is dynamic; the test root needs a static shell")
	}
	dynamic, err := os.ReadFile("/bin/true")
	if err != nil || readELFInterpreter(bytes.NewReader(dynamic)) == "" {
		testenv.Skip(t, "needs a dynamic /bin/true for a program whose loader the target lacks")
	}
	loader := readELFInterpreter(bytes.NewReader(dynamic))
	loaderBytes, err := os.ReadFile(loader)
	if err != nil {
		testenv.Skipf(t, "read the host's loader: %v", err)
	}
	withShell := map[string]string{"bin/busybox": string(busybox), "bin/sh": "->busybox"}
	tests := []struct {
		name  string
		files map[string]string
		argv  []string
		skip  []string // what the skip names; nil: not a skip
		exit  int      // the exit code of a command that ran
	}{
		{
			name:  "script without /bin/sh",
			files: map[string]string{"s/runcmd": "#!/bin/sh\nexit 0\n"},
			argv:  []string{"/s/runcmd"},
			skip:  []string{"/s/runcmd", "/bin/sh"},
		},
		{
			name:  "bootcmd's /bin/sh FILE without /bin/sh",
			files: map[string]string{"s/bootcmd.sh": "exit 0\n"},
			argv:  []string{"/bin/sh", "/s/bootcmd.sh"},
			skip:  []string{"/bin/sh"},
		},
		{
			name:  "dynamic program without its loader",
			files: map[string]string{"usr/bin/true": string(dynamic)},
			argv:  []string{"true"},
			skip:  []string{"/usr/bin/true", loader},
		},
		{
			name:  "script through a dynamic shell without its loader",
			files: map[string]string{"s/x": "#!/bin/sh\n", "bin/sh": string(dynamic)},
			argv:  []string{"/s/x"},
			skip:  []string{"/bin/sh", loader},
		},
		{
			// The loader starts and finds no libc: the program's failure.
			name:  "dynamic program with its loader but not its libraries",
			files: map[string]string{"usr/bin/true": string(dynamic), strings.TrimPrefix(loader, "/"): string(loaderBytes)},
			argv:  []string{"true"},
			exit:  127,
		},
		{
			name:  "script that runs",
			files: merge(withShell, map[string]string{"s/x": "#!/bin/sh\nexit 0\n"}),
			argv:  []string{"/s/x"},
			exit:  0,
		},
		{
			name:  "script that runs and fails",
			files: merge(withShell, map[string]string{"s/x": "#!/bin/sh\nexit 3\n"}),
			argv:  []string{"/s/x"},
			exit:  3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := makeRoot(t, tt.files, nil)
			h := &HostSystem{Root: root}
			err := h.Run(t.Context(), Command{Argv: tt.argv})
			if tt.skip != nil {
				if !errors.Is(err, ErrSkipped) {
					t.Fatalf("Run = %v, want a skip", err)
				}
				for _, want := range tt.skip {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("skip %q does not name %q", err, want)
					}
				}
				return
			}
			if errors.Is(err, ErrSkipped) {
				t.Fatalf("Run = %v, want the command run", err)
			}
			var exit interface{ ExitCode() int }
			switch {
			case tt.exit == 0 && err != nil:
				t.Errorf("Run = %v, want success", err)
			case tt.exit != 0 && (!errors.As(err, &exit) || exit.ExitCode() != tt.exit):
				t.Errorf("Run = %v, want exit code %d", err, tt.exit)
			}
		})
	}
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestCommandEnvPath: on the running system a command gets the PATH
// seedinit was given (u-root's init puts /bbin on it, where all its
// commands are); a chrooted target gets the standard one; a command's
// own PATH wins over both.
func TestCommandEnvPath(t *testing.T) {
	t.Setenv("PATH", "/bbin:/bin")
	std := strings.Join(searchPath, ":")
	for _, tt := range []struct {
		name string
		live bool
		own  []string
		want string
	}{
		{"running system: the caller's PATH", true, nil, "/bbin:/bin"},
		{"chrooted target: the standard PATH", false, nil, std},
		{"the command's own PATH wins", true, []string{"PATH=/opt/bin"}, "/opt/bin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := commandEnv(tt.live, tt.own)
			if got := strings.Join(pathDirs(env), ":"); got != tt.want {
				t.Errorf("pathDirs(commandEnv(%v, %q)) = %q, want %q", tt.live, tt.own, got, tt.want)
			}
		})
	}
	t.Run("no PATH given: the standard one", func(t *testing.T) {
		t.Setenv("PATH", "")
		if got := strings.Join(pathDirs(commandEnv(true, nil)), ":"); got != std {
			t.Errorf("PATH %q, want %q", got, std)
		}
	})
}
