package console

import (
	"testing"

	"github.com/seedinit/seedinit/apply"
)

func FuzzKeygenLine(f *testing.F) {
	f.Add([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1Y2t5IGtleSBmb3IgdGVzdHMgb25seSEhISEh c\n"))
	f.Add([]byte("ssh-rsa AAAA\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = keygenLine("/f", data)
	})
}

func FuzzLoadPowerState(f *testing.F) {
	f.Add("reboot", "+5", "msg", "30", "true")
	f.Add("halt", "now", "", "x", "")
	f.Fuzz(func(t *testing.T, mode, delay, message, timeout, condition string) {
		_, _, _, _ = LoadPowerState(apply.Config{"power_state": map[string]any{
			"mode": mode, "delay": delay, "message": message, "timeout": timeout, "condition": condition,
		}})
	})
}
