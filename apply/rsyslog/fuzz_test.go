package rsyslog

import (
	"strings"
	"testing"
)

func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{"192.168.1.1", "@@10.0.0.1:514", "kern.* @h # c", "[fd00::1]:1", "[]", "@@", "a # b # c", " h\n", "h:0", "[a]]", "[x", "h:99999999999999999999"} {
		f.Add(s, "")
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, line, name string) {
		r, err := ParseRemote(line, name)
		if err != nil {
			return
		}
		if r.Address == "" {
			t.Fatalf("ParseRemote(%q) gave no address and no error", line)
		}
		if r.Protocol != "udp" && r.Protocol != "tcp" {
			t.Fatalf("ParseRemote(%q) protocol %q", line, r.Protocol)
		}
		if strings.HasPrefix(r.Port, "0") {
			t.Fatalf("ParseRemote(%q) port %q keeps a leading zero", line, r.Port)
		}
		out := r.String()
		if !strings.HasPrefix(out, r.Selector+" @") {
			t.Fatalf("ParseRemote(%q).String() = %q lacks selector and protocol", line, out)
		}
	})
}
