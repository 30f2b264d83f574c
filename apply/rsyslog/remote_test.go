package rsyslog

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRemote(t *testing.T) {
	tests := []struct {
		name, line, key string
		want            string
		wantErr         bool
	}{
		{name: "bare host", line: "192.168.1.1", key: "maas", want: "*.* @192.168.1.1 # maas"},
		{name: "tcp with port", line: "@@10.0.0.1:514", want: "*.* @@10.0.0.1:514"},
		{name: "selector", line: "kern.* @host.example", key: "k", want: "kern.* @host.example # k"},
		{name: "ipv6 bracketed", line: "[fd00::1]:10514", key: "v6", want: "*.* @[fd00::1]:10514 # v6"},
		{name: "bracketed name loses brackets", line: "@@[logs]", want: "*.* @@logs"},
		{name: "comment names it", line: "10.0.0.1 # from comment", want: "*.* @10.0.0.1 # from comment"},
		{name: "key wins over comment", line: "10.0.0.1 # comment", key: "key", want: "*.* @10.0.0.1 # key"},
		{name: "two comments kept in data", line: "a # b # c", wantErr: true},
		{name: "leading zeros in port", line: "h:00514", want: "*.* @h:514"},
		{name: "port zero is none", line: "h:0", want: "*.* @h"},
		{name: "unstripped single word", line: " h ", want: "*.* @ h "},
		{name: "three words", line: "a b c", wantErr: true},
		{name: "empty brackets", line: "[]", wantErr: true},
		{name: "only protocol", line: "@@", wantErr: true},
		{name: "bad brackets", line: "[fd00::1", wantErr: true},
		{name: "bad port", line: "h:http", wantErr: true},
		{name: "only whitespace", line: "  ", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRemote(tt.line, tt.key)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseRemote(%q) = %q, want an error", tt.line, r)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRemote(%q): %v", tt.line, err)
			}
			if diff := cmp.Diff(tt.want, r.String()); diff != "" {
				t.Errorf("ParseRemote(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
	if _, err := ParseRemote("@@:514", ""); !errors.Is(err, ErrNoAddress) {
		t.Errorf("ParseRemote(@@:514) = %v, want ErrNoAddress", err)
	}
}

func TestReloadCommand(t *testing.T) {
	tests := []struct {
		name    string
		command any
		systemd bool
		want    []string
		wantErr bool
	}{
		{name: "auto systemd", command: "auto", systemd: true, want: []string{"systemctl", "reload-or-try-restart", "rsyslog"}},
		{name: "auto sysv", command: "auto", want: []string{"service", "rsyslog", "restart"}},
		{name: "string is one program", command: "/usr/local/bin/restart-syslog", want: []string{"/usr/local/bin/restart-syslog"}},
		{name: "list", command: []any{"sv", "restart", "rsyslog"}, want: []string{"sv", "restart", "rsyslog"}},
		{name: "empty list", command: []any{}, wantErr: true},
		{name: "non-string item", command: []any{"kill", int64(1)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReloadCommand(tt.command, tt.systemd)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReloadCommand(%v) error = %v, want error %v", tt.command, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReloadCommand(%v) (-want +got):\n%s", tt.command, diff)
			}
		})
	}
}
