package boot

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A filesystem PID 1 mounted for provisioning (the root's /var, /home)
// must be given back to the real init unmounted, and for real: a lazy
// unmount leaves the filesystem alive and its block device claimed, and
// Debian's checkfs (fsck -p) finds it "in use" and drops to sulogin. What
// keeps it busy is most often a process seedinit started itself (a
// bootcmd's "daemon &" with a log open under /var). Those PID 1 ends,
// first asked (SIGTERM), then told (SIGKILL), within a bound; anything
// else keeps the filesystem mounted where it is, which the real init's
// fsck -M and mount -a accept.

// procInfo is what PID 1 reads of a process in /proc/PID/stat.
type procInfo struct {
	pid, ppid, pgid, sid int
	comm                 string
	zombie               bool
}

// readProc reads /proc/PID/stat; ok is false for a process gone.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	// The name is in parentheses and may hold anything, ')' included.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procInfo{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 4 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, comm: s[open+1 : end], zombie: f[0] == "Z"}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	return p, true
}

// allProcs lists the processes in /proc, this one aside.
func allProcs() map[int]procInfo {
	out := map[int]procInfo{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// ownership says which processes are seedinit's to end: those it started
// and their descendants. As PID 1 every orphan becomes its child, so its
// descendants are every process the boot has, a daemon that left for a
// session of its own included; elsewhere (a test) the sessions of the
// commands it started through the reaper say it too.
type ownership struct {
	self     int
	sessions map[int]bool
}

// ownedBy is the ownership of this process and the commands r started.
func ownedBy(r *Reaper) ownership {
	o := ownership{self: os.Getpid(), sessions: map[int]bool{}}
	if r != nil {
		for _, s := range r.Sessions() {
			o.sessions[s] = true
		}
	}
	if own, err := unix.Getsid(0); err == nil {
		// A command started in this process's own session is no proof:
		// everything else in that session is not seedinit's.
		delete(o.sessions, own)
	}
	return o
}

// owns reports whether p is seedinit's: in a session of its commands, or
// a descendant of this process (following parents in procs).
func (o ownership) owns(p procInfo, procs map[int]procInfo) bool {
	if o.sessions[p.sid] {
		return true
	}
	for i, q := 0, p; i < 64; i++ {
		if q.ppid == o.self {
			return true
		}
		next, ok := procs[q.ppid]
		if !ok {
			return false
		}
		q = next
	}
	return false
}

// holdsDevice reports whether the process pid uses the filesystem on dev:
// its working directory, root, executable, an open file or a mapped one.
func holdsDevice(pid int, dev uint64) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	on := func(p string) bool {
		var st unix.Stat_t
		return unix.Stat(p, &st) == nil && st.Dev == dev
	}
	for _, l := range []string{"cwd", "root", "exe"} {
		if on(dir + "/" + l) {
			return true
		}
	}
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		if on(dir + "/fd/" + fd.Name()) {
			return true
		}
	}
	return mapsDevice(dir+"/maps", dev)
}

// mapsDevice reports whether /proc/PID/maps lists a mapping of a file on
// dev ("addr perms offset MAJ:MIN inode path", in hex).
func mapsDevice(maps string, dev uint64) bool {
	f, err := os.Open(maps)
	if err != nil {
		return false
	}
	defer f.Close()
	want := fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[3] == want && fields[4] != "0" {
			return true
		}
	}
	return false
}

// holders are the live processes that use the filesystem on dev.
func holders(dev uint64) (procs map[int]procInfo, found []procInfo) {
	procs = allProcs()
	for _, p := range procs {
		if !p.zombie && holdsDevice(p.pid, dev) {
			found = append(found, p)
		}
	}
	slices.SortFunc(found, func(a, b procInfo) int { return a.pid - b.pid })
	return procs, found
}

// Bounds on ending a filesystem's holders: asked to end, then told.
const (
	holderTermWait = 3 * time.Second
	holderKillWait = 2 * time.Second
)

// endHolders ends the processes o owns that use the filesystem on dev,
// and returns what it ended and what still holds it (seedinit's or not),
// as "name (pid N)". Each is asked (SIGTERM), then, after holderTermWait,
// told (SIGKILL); the filesystem is looked at again until none of its
// own is left or holderKillWait more has passed, since a holder may fork
// one more (a shell loop's next command) before it ends. Processes are
// ended one by one, not by process group: another daemon the same
// command started that holds nothing is left running.
func endHolders(dev uint64, o ownership) (ended, left []string) {
	start := time.Now()
	sent := map[int]syscall.Signal{}
	for {
		procs, found := holders(dev)
		var ours []procInfo
		for _, p := range found {
			if o.owns(p, procs) {
				ours = append(ours, p)
			}
		}
		waited := time.Since(start)
		if len(ours) == 0 || waited > holderTermWait+holderKillWait {
			break
		}
		sig := syscall.SIGTERM
		if waited > holderTermWait {
			sig = syscall.SIGKILL
		}
		for _, p := range ours {
			if sent[p.pid] == sig {
				continue
			}
			if _, seen := sent[p.pid]; !seen {
				ended = append(ended, describeProc(p))
			}
			sent[p.pid] = sig
			syscall.Kill(p.pid, sig)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, still := holders(dev)
	for _, p := range still {
		left = append(left, describeProc(p))
	}
	return ended, left
}

func describeProc(p procInfo) string {
	return fmt.Sprintf("%s (pid %d)", p.comm, p.pid)
}
