package boot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// openPTY opens a pseudo-terminal pair, or skips when the system has none.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Skipf(t, "no pseudo-terminals here (/dev/ptmx: %v)", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		testenv.Skipf(t, "unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		testenv.Skipf(t, "pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Skipf(t, "open the pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestReleaseControllingTerminal starts this test binary as u-root's init
// starts its uinit (a new session, the terminal as its controlling
// terminal), and has it let go of the terminal: afterwards the process
// has no controlling terminal and was not killed by the SIGHUP that
// TIOCNOTTY sends its group.
func TestReleaseControllingTerminal(t *testing.T) {
	if os.Getenv("SEEDINIT_TEST_CTTY_CHILD") == "1" {
		if _, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
			fmt.Println("child: no controlling terminal at the start:", err)
			os.Exit(3)
		}
		ReleaseControllingTerminal()
		_, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if !errors.Is(err, unix.ENXIO) {
			fmt.Println("child: still a controlling terminal after the release:", err)
			os.Exit(4)
		}
		fmt.Println("child: released")
		os.Exit(0)
	}
	_, slave := openPTY(t)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReleaseControllingTerminal$")
	cmd.Env = append(os.Environ(), "SEEDINIT_TEST_CTTY_CHILD=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Run()
	b, _ := os.ReadFile(out.Name())
	if err != nil {
		t.Fatalf("child: %v (a SIGHUP kills it when not ignored)\n%s", err, b)
	}
	if !strings.Contains(string(b), "child: released") {
		t.Errorf("child output:\n%s", b)
	}
}

// TestReleaseControllingTerminalNotLeader: a process that does not lead
// its session (seedinit run from a shell) leaves the terminal alone.
func TestReleaseControllingTerminalNotLeader(t *testing.T) {
	if sid, _ := unix.Getsid(0); sid == os.Getpid() {
		testenv.Skip(t, "the test process leads its session")
	}
	before, errBefore := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if errBefore == nil {
		before.Close()
	}
	ReleaseControllingTerminal()
	after, errAfter := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if errAfter == nil {
		after.Close()
	}
	if (errBefore == nil) != (errAfter == nil) {
		t.Errorf("controlling terminal changed: before %v, after %v", errBefore, errAfter)
	}
}
