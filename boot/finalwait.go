package boot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/samefile"
	nlink "github.com/seedinit/seedinit/netup/link"
)

// FinalStageWaitFile holds what the final stage is waiting for right now,
// while it waits: `seedinit status` shows it.
const FinalStageWaitFile = stages.FinalStageWaitFile

// WaitForRealInit returns once the real init has set up the system the
// final stage writes to: PID 1 is no longer this program (it has exec'd
// the real init), root is writable, and every filesystem in mounts (as
// "/var", relative to root) is mounted again. It waits as long as that
// takes (waiting costs nothing, and running earlier would write under
// mount points about to be covered, or fail on a read-only root), telling
// waiting each reason once, until ctx ends; it reports whether the system
// is ready.
func WaitForRealInit(ctx context.Context, root string, mounts []string, waiting func(reason string)) bool {
	last := ""
	for {
		reason := notReadyReason(root, mounts)
		if reason == "" {
			return true
		}
		if reason != last && waiting != nil {
			waiting(reason)
			last = reason
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pid1Exe is PID 1's executable; a seam for the tests, which do not run
// as PID 1.
var pid1Exe = "/proc/1/exe"

// notReadyReason says what the final stage still waits for, "" for
// nothing.
func notReadyReason(root string, mounts []string) string {
	// While PID 1 is seedinit, it is this process's own parent with the
	// same credentials, so its executable can be seen: one that cannot
	// be seen is another program's.
	pid1, _, err1 := samefile.Identify(pid1Exe)
	self, _, err2 := samefile.Identify(samefile.SelfExe)
	if err1 == nil && err2 == nil && pid1 == self {
		return "PID 1 is still seedinit"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil || st.Flags&unix.ST_RDONLY != 0 {
		return "the root is read-only"
	}
	var missing []string
	for _, m := range mounts {
		if !isMountPoint(filepath.Join(root, m)) {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return strings.Join(missing, ", ") + " not mounted yet"
	}
	return ""
}

// NoteFinalStageWaiting writes reason to FinalStageWaitFile; an empty
// reason removes it.
func NoteFinalStageWaiting(reason string) {
	if reason == "" {
		os.Remove(FinalStageWaitFile)
		return
	}
	if os.MkdirAll(RunDir, 0o755) == nil {
		os.WriteFile(FinalStageWaitFile, []byte(reason+"\n"), 0o644)
	}
}

// NetworkWait bounds the final stage's wait for the interfaces handed to
// the root's own network service, as cloud-init's final stage waits for
// the network to be online: a service that fails must not keep the final
// stage from running for ever; most of its modules need no network.
const NetworkWait = 2 * time.Minute

// WaitForNetwork returns once every interface in ifaces has a global
// address again (the root's network service brought it up), or when
// limit or ctx ends; it reports the interfaces still without one.
func WaitForNetwork(ctx context.Context, ifaces []string, limit time.Duration, waiting func(reason string)) []string {
	deadline := time.Now().Add(limit)
	last := ""
	for {
		var down []string
		for _, name := range ifaces {
			if !hasGlobalAddress(name) {
				down = append(down, name)
			}
		}
		if len(down) == 0 || time.Now().After(deadline) {
			return down
		}
		if reason := strings.Join(down, ", ") + " not up yet"; reason != last && waiting != nil {
			waiting(reason)
			last = reason
		}
		select {
		case <-ctx.Done():
			return down
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func hasGlobalAddress(name string) bool {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return false
	}
	addrs, err := nlink.Addrs(link, netlink.FAMILY_ALL)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if a.Scope == int(netlink.SCOPE_UNIVERSE) && a.Flags&unix.IFA_F_TENTATIVE == 0 {
			return true
		}
	}
	return false
}
