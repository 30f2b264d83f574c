package vmware_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/seed/vmware"
	"github.com/seedinit/seedinit/seed/vmware/vmwaretest"
)

// info-get over the emulated VMX: values of every length modulo 4 (the
// last word of a reply or request is short), keys whose request is of
// every length modulo 4 ("info-get guestinfo.metadata" is 27 bytes: the
// archived vmw-guestinfo sends such a request's last three bytes
// reversed), bytes above 0x7f, an empty value, a missing key; every
// channel closed after.
func TestGuestInfo(t *testing.T) {
	values := map[string]string{
		"metadata": "instance-id: iid-1\n", "userdata": "", "a": "x", "ab": "xy", "abc": "xyz", "abcd": "wxyz",
		"userdata.encoding": "gzip+base64", "uni": "héllo\x00\xff\x80 wörld", "big": strings.Repeat("0123456789abcdef", 8192),
	}
	h := vmwaretest.New(values)
	for key, want := range values {
		got, found, err := vmware.GuestInfo(h, key)
		if err != nil || !found || string(got) != want {
			t.Errorf("%s: %q %v %v, want %q", key, clip(got), found, err, clip([]byte(want)))
		}
	}
	if got, found, err := vmware.GuestInfo(h, "vendordata"); err != nil || found || got != nil {
		t.Errorf("a missing key: %q %v %v", got, found, err)
	}
	if n := h.Open(); n != 0 {
		t.Errorf("%d channels left open", n)
	}
	if h.Requests[0] != "info-get guestinfo."+firstKey(h.Requests[0]) {
		t.Errorf("request %q", h.Requests[0])
	}
	if err := vmware.SetGuestInfo(h, "userdata", "---"); err != nil || h.GuestInfo["userdata"] != "---" {
		t.Errorf("info-set: %v %q", err, h.GuestInfo["userdata"])
	}
	if _, _, err := vmware.GuestInfo(h, "a b"); err == nil {
		t.Error("a key with a space was sent")
	}
}

func firstKey(req string) string { return strings.TrimPrefix(req, "info-get guestinfo.") }

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// A VMX that checkpoints mid-reply sends the reply again; one without
// cookies still opens a channel.
func TestGuestInfoCheckpointAndNoCookies(t *testing.T) {
	h := vmwaretest.New(map[string]string{"metadata": "0123456789"})
	h.CheckpointAt = 2
	if got, _, err := vmware.GuestInfo(h, "metadata"); err != nil || string(got) != "0123456789" {
		t.Errorf("after a checkpoint: %q %v", got, err)
	}
	h = vmwaretest.New(map[string]string{"metadata": "m"})
	h.NoCookies = true
	if got, _, err := vmware.GuestInfo(h, "metadata"); err != nil || string(got) != "m" {
		t.Errorf("without cookies: %q %v", got, err)
	}
}

// A hostile or broken hypervisor costs a bounded number of calls and
// gives an error: a reply it announces as 4 GiB, a port that faults.
func TestGuestInfoHostileHypervisor(t *testing.T) {
	h := vmwaretest.New(map[string]string{"metadata": "m"})
	h.ReplySize = 0xFFFFFFFF
	if _, _, err := vmware.GuestInfo(h, "metadata"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a 4 GiB reply: %v", err)
	}
	if h.Calls > 20 {
		t.Errorf("%d calls for a refused reply", h.Calls)
	}
	h = vmwaretest.New(map[string]string{"metadata": "m"})
	h.ReplySize = 1 << 19 // more than it sends: the payload calls fail
	if _, _, err := vmware.GuestInfo(h, "metadata"); err == nil {
		t.Error("a reply shorter than announced was taken")
	}
	h = vmwaretest.New(nil)
	h.Fail = errors.New("the VMware backdoor faulted")
	if _, _, err := vmware.GuestInfo(h, "metadata"); err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Errorf("a faulting port: %v", err)
	}
}
