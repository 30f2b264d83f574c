package hostname

import "testing"

// FuzzConfParsers checks that /etc/hostname and /etc/hosts, which come
// from the target as they are, never make the parsers panic, and that
// writing back what was parsed is stable.
func FuzzConfParsers(f *testing.F) {
	for _, s := range []string{"", "host\n", "# c\nhost # x\n\n", "a\nb\n", "127.0.1.1 a.b a\r\n::1 localhost\t# v6\n", "\x85\u2028x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := parseHostnameConf(s); err == nil {
			c.SetHostname("name")
			again, err := parseHostnameConf(c.String())
			if err != nil {
				t.Fatalf("re-parse of %q: %v", c.String(), err)
			}
			if again.String() != c.String() {
				t.Errorf("hostname file not stable: %q then %q", c.String(), again.String())
			}
		}
		h := parseHostsConf(s)
		h.AddEntry("127.0.1.1", "a.example", "a")
		out := h.String()
		if got := parseHostsConf(out).String(); got != out {
			t.Errorf("hosts file not stable: %q then %q", out, got)
		}
		fqdnFromHosts(s, "a")
	})
}
