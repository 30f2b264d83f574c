package link

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

// A dump the kernel interrupted is run again; a dump interrupted every
// time gives up with the kernel's word; other errors are not retried.
func TestRetryDump(t *testing.T) {
	calls := 0
	got, err := RetryDump(func() ([]int, error) {
		calls++
		if calls < 3 {
			return []int{1}, netlink.ErrDumpInterrupted
		}
		return []int{1, 2}, nil
	})
	if err != nil || len(got) != 2 || calls != 3 {
		t.Errorf("got %v, %v after %d calls; want [1 2] after 3", got, err, calls)
	}
	calls = 0
	if _, err := RetryDump(func() ([]int, error) { calls++; return nil, netlink.ErrDumpInterrupted }); !errors.Is(err, netlink.ErrDumpInterrupted) || calls != 5 {
		t.Errorf("always interrupted: %v after %d calls", err, calls)
	}
	calls = 0
	other := errors.New("no such device")
	if _, err := RetryDump(func() ([]int, error) { calls++; return nil, other }); err != other || calls != 1 {
		t.Errorf("another error: %v after %d calls", err, calls)
	}
}
