package boot

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCmdline(t *testing.T) {
	c := ParseCmdline(`BOOT_IMAGE=/vmlinuz root=PARTUUID=1234-5 ro  quiet ds="nocloud;s=http://10.0.0.1/seed/" console=ttyS0 console=tty0 -- single  x`)
	if v, _ := c.Get("ds"); v != "nocloud;s=http://10.0.0.1/seed/" {
		t.Errorf("quoted ds = %q", v)
	}
	if v, _ := c.Get("console"); v != "tty0" {
		t.Errorf("last console wins: got %q", v)
	}
	if d := cmp.Diff([]string{"single", "x"}, c.InitArgs); d != "" {
		t.Errorf("init args (-want +got):\n%s", d)
	}
	if !c.Has("quiet") || c.Has("single") {
		t.Errorf("quiet should be a param and single an init argument: %+v", c)
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		line    string
		want    Options
		wantErr int
	}{
		{
			line: "root=LABEL=rootfs rootfstype=ext4 rw rootwait rootdelay=3 init=/sbin/init.real",
			want: Options{Root: "LABEL=rootfs", RootFS: "ext4", RootWait: true, RootDelay: 3 * time.Second, Init: "/sbin/init.real", Budget: DefaultBudget},
		},
		{
			line: "root=/dev/vda1 seedinit.init=/sbin/openrc-init init=/bin/sh seedinit.ds=ConfigDrive seedinit.budget=1500ms seedinit.modules=virtio_net,isofs seedinit.debug seedinit.rescue=shell",
			want: Options{Root: "/dev/vda1", ReadOnly: true, Init: "/sbin/openrc-init", Datasource: "ConfigDrive", Budget: 1500 * time.Millisecond, Modules: []string{"virtio_net", "isofs"}, Debug: true, Rescue: "shell"},
		},
		{
			line: "ds=nocloud;s=http://10.1.1.1:8000/;i=iid-01 seedinit.budget=2.5 seedinit.disable",
			want: Options{ReadOnly: true, Datasource: "nocloud", DSArgs: "s=http://10.1.1.1:8000/;i=iid-01", Budget: 2500 * time.Millisecond, Disable: true},
		},
		{
			line:    "rootdelay=soon seedinit.budget=-1",
			want:    Options{ReadOnly: true, Budget: DefaultBudget},
			wantErr: 2,
		},
		{line: "seedinit.trust=require", want: Options{ReadOnly: true, Budget: DefaultBudget, Trust: "require"}},
		{line: "seedinit.report=http://10.0.0.1:8080/report/waf-7", want: Options{ReadOnly: true, Budget: DefaultBudget, Report: "http://10.0.0.1:8080/report/waf-7"}},
		// Kept as given and taken as require by the check, with a warning.
		{line: "seedinit.trust=maybe", want: Options{ReadOnly: true, Budget: DefaultBudget, Trust: "maybe"}, wantErr: 1},
		{line: "seedinit.dhcp=keep", want: Options{ReadOnly: true, Budget: DefaultBudget, DHCP: DHCPKeep}},
		{line: "seedinit.dhcp=OFF", want: Options{ReadOnly: true, Budget: DefaultBudget, DHCP: DHCPOff}},
		{line: "seedinit.dhcp=yes", want: Options{ReadOnly: true, Budget: DefaultBudget}, wantErr: 1},
		{line: "seedinit.strict", want: Options{ReadOnly: true, Budget: DefaultBudget, Strict: true}},
		{line: "seedinit.strict=1", want: Options{ReadOnly: true, Budget: DefaultBudget, Strict: true}},
		{line: "seedinit.strict=0", want: Options{ReadOnly: true, Budget: DefaultBudget}},
		// A typo keeps an appliance strict, with a warning.
		{line: "seedinit.strict=yse", want: Options{ReadOnly: true, Budget: DefaultBudget, Strict: true}, wantErr: 1},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, errs := ParseOptions(ParseCmdline(tt.line))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if len(errs) != tt.wantErr {
				t.Errorf("errors = %v, want %d", errors.Join(errs...), tt.wantErr)
			}
		})
	}
}

func FuzzParseCmdline(f *testing.F) {
	f.Add(`root=/dev/vda1 ro ds="nocloud;s=x" -- a b`)
	f.Add(`"unterminated quote root=x`)
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseCmdline(s)
		ParseOptions(c)
	})
}

func TestParseKexec(t *testing.T) {
	k, err := ParseKexec("kernel=/boot/vmlinuz;initrd=/boot/initrd.img;cmdline=console=ttyS0 root=/dev/vda1;x")
	if err != nil {
		t.Fatal(err)
	}
	want := KexecSpec{Kernel: "/boot/vmlinuz", Initrd: "/boot/initrd.img", Cmdline: "console=ttyS0 root=/dev/vda1;x"}
	if d := cmp.Diff(want, k); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	for _, bad := range []string{"initrd=/x", "kernel=http://h/vmlinuz", "kernel=/k;colour=blue", "kernel"} {
		if _, err := ParseKexec(bad); err == nil {
			t.Errorf("ParseKexec(%q): want an error", bad)
		}
	}
	if _, err := ParseKexec("kernel=https://h/vmlinuz;sha256=ABCD"); err != nil {
		t.Errorf("URL with sha256: %v", err)
	}
}
