package apply

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// The kernel reads this much of a file to pick its binary format, and a
// #! line longer than that cannot name an interpreter it would start.
const binprmBufSize = 256

// How far interpreters that are scripts themselves are followed: about as
// far as the kernel follows them (exec_binprm); a longer chain fails
// with ELOOP, a fault of the script that exec reports.
const maxInterpreterDepth = 5

// checkInterpreters returns an error wrapping ErrSkipped when the kernel
// would refuse to start prog inside root with ENOENT or EACCES although
// prog itself is there: a #! line naming an interpreter the target lacks
// or cannot execute (the shell of a target without /bin/sh), a dynamic
// ELF whose loader is missing (a host binary in a busybox root), or an
// `env NAME` line whose NAME is on no directory of pathDirs. Those mean
// the target cannot run the command yet, which must not be reported as
// the command's failure. dir is the working directory, for relative
// names. nil means nothing is missing, or prog is in no format checked
// here and exec will say what is wrong with it.
func checkInterpreters(root *rootfs.Root, prog, dir string, pathDirs []string) error {
	// who names the file being looked at in the messages, which follow
	// Run's "run PROG: ".
	who := "it"
	for depth := 0; depth < maxInterpreterDepth; depth++ {
		head, err := readHead(root, prog)
		if err != nil {
			return nil
		}
		switch {
		case bytes.HasPrefix(head, []byte("#!")):
			interp, arg := parseShebang(head)
			if interp == "" {
				return nil
			}
			if strings.HasSuffix(interp, "\r") || strings.HasSuffix(arg, "\r") {
				// A fault of the script, not of the target: the kernel
				// would look for "/bin/sh\r", and no target has it.
				return fmt.Errorf("the #! line of %s ends in a carriage return (DOS line endings)", prog)
			}
			if why := notExecutable(root, inDir(dir, interp)); why != "" {
				return fmt.Errorf("%w: %s names the interpreter %s on its #! line, which %s in target %s", ErrSkipped, who, interp, why, root.Dir())
			}
			if path.Base(interp) == "env" && isCommandName(arg) {
				if _, ok := lookPathIn(root, arg, pathDirs); !ok {
					return fmt.Errorf("%w: %s runs the interpreter %s through %s on its #! line, and %s is on no directory of the PATH in target %s", ErrSkipped, who, arg, interp, arg, root.Dir())
				}
			}
			prog = inDir(dir, interp)
			who = "its interpreter " + prog
		case bytes.HasPrefix(head, []byte("\x7fELF")):
			loader := elfInterpreter(root, prog)
			if loader == "" {
				return nil
			}
			if why := notExecutable(root, inDir(dir, loader)); why != "" {
				return fmt.Errorf("%w: %s needs the program loader %s, which %s in target %s", ErrSkipped, who, loader, why, root.Dir())
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// readHead reads what the kernel reads to choose a binary format.
func readHead(root *rootfs.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, binprmBufSize)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// parseShebang splits a #! line as binfmt_script does: the interpreter is
// the first word, and the rest of the line, trimmed, is one argument.
func parseShebang(head []byte) (interp, arg string) {
	line := head[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	s := strings.TrimLeft(string(line), " \t")
	i := strings.IndexAny(s, " \t\x00")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.Trim(s[i:], " \t")
}

// isCommandName is an env argument that names a program to look up (not
// an option such as -S, an assignment, or a path).
func isCommandName(arg string) bool {
	return arg != "" && !strings.ContainsAny(arg, " \t/=") && !strings.HasPrefix(arg, "-")
}

// inDir resolves a relative name against the command's working directory,
// as the kernel does against the process's.
func inDir(dir, name string) string {
	if path.IsAbs(name) {
		return name
	}
	if dir == "" {
		dir = "/"
	}
	return path.Join(dir, name)
}

// notExecutable says why the kernel would not start name in root, or ""
// when it would.
func notExecutable(root *rootfs.Root, name string) string {
	fi, err := root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		// Unreadable for another reason: let exec report it.
		return ""
	case !fi.Mode().IsRegular():
		return "is not a regular file"
	case fi.Mode().Perm()&0o111 == 0:
		return "is not executable"
	}
	return ""
}

// lookPathIn is LookPath over the given directories.
func lookPathIn(root *rootfs.Root, name string, dirs []string) (string, bool) {
	for _, dir := range dirs {
		p := path.Join(dir, name)
		if fi, err := root.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// pathDirs is the PATH a command gets: the last PATH= of its environment,
// as exec takes it, else baseEnv's.
func pathDirs(env []string) []string {
	dirs := searchPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			dirs = nil
			for _, d := range strings.Split(v, ":") {
				if d == "" {
					d = "."
				}
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// elfInterpreter returns the PT_INTERP path of the ELF file name in root,
// "" for a static program or a file it cannot read as ELF.
func elfInterpreter(root *rootfs.Root, name string) string {
	f, err := root.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	return readELFInterpreter(f)
}

// ELF constants, from the System V ABI.
const (
	elfClass32  = 1
	elfClass64  = 2
	elfData2LSB = 1
	elfData2MSB = 2
	ptInterp    = 3
	// pathMax bounds PT_INTERP, as the kernel does.
	pathMax = 4096
	// maxPhdrBytes is the kernel's bound on the program header table.
	maxPhdrBytes = 65536
)

// readELFInterpreter reads the program loader an ELF executable names in
// its PT_INTERP header, as the kernel's ELF loader finds it; "" when there
// is none or r is not an ELF file the kernel would load.
func readELFInterpreter(r io.ReaderAt) string {
	var ident [64]byte
	if n, _ := r.ReadAt(ident[:], 0); n < 52 || !bytes.HasPrefix(ident[:], []byte("\x7fELF")) {
		return ""
	}
	var order binary.ByteOrder
	switch ident[5] {
	case elfData2LSB:
		order = binary.LittleEndian
	case elfData2MSB:
		order = binary.BigEndian
	default:
		return ""
	}
	var phoff uint64
	var phentsize, phnum uint16
	switch ident[4] {
	case elfClass64:
		phoff = order.Uint64(ident[32:])
		phentsize, phnum = order.Uint16(ident[54:]), order.Uint16(ident[56:])
		if phentsize < 56 {
			return ""
		}
	case elfClass32:
		phoff = uint64(order.Uint32(ident[28:]))
		phentsize, phnum = order.Uint16(ident[42:]), order.Uint16(ident[44:])
		if phentsize < 32 {
			return ""
		}
	default:
		return ""
	}
	if int(phentsize)*int(phnum) > maxPhdrBytes {
		return ""
	}
	if phoff > 1<<62 {
		return ""
	}
	table := make([]byte, int(phentsize)*int(phnum))
	if n, _ := r.ReadAt(table, int64(phoff)); n < len(table) {
		return ""
	}
	for i := 0; i < int(phnum); i++ {
		ph := table[i*int(phentsize):]
		if order.Uint32(ph) != ptInterp {
			continue
		}
		var off, size uint64
		if ident[4] == elfClass64 {
			off, size = order.Uint64(ph[8:]), order.Uint64(ph[32:])
		} else {
			off, size = uint64(order.Uint32(ph[4:])), uint64(order.Uint32(ph[16:]))
		}
		if size < 2 || size > pathMax || off > 1<<62 {
			return ""
		}
		b := make([]byte, size)
		if n, _ := r.ReadAt(b, int64(off)); n < len(b) || b[size-1] != 0 {
			return ""
		}
		// The kernel uses the first PT_INTERP and reads the name up to
		// its NUL.
		name, _, _ := bytes.Cut(b, []byte{0})
		return string(name)
	}
	return ""
}
