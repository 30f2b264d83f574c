//go:build e2e_tpm

package measure

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestExtendDeviceRepeatedly proves the measurement on a kernel's TPM
// device: SEEDINIT_TPM_EXTENDS extends in a row (200 by default) through
// SEEDINIT_TPM_DEVICE, each answered, and the PCR replays from them.
// scripts/e2e builds it (go test -c -tags e2e_tpm) and runs it in a QEMU
// guest with swtpm while the host is loaded; it is not in the plain test
// run, which has no TPM device. SEEDINIT_TPM_VIA_OSFILE=1 goes through
// os.OpenFile as seedinit did before, to see that way fail.
func TestExtendDeviceRepeatedly(t *testing.T) {
	dev := os.Getenv("SEEDINIT_TPM_DEVICE")
	n, _ := strconv.Atoi(os.Getenv("SEEDINIT_TPM_EXTENDS"))
	if n <= 0 {
		n = 200
	}
	var tpm TPM
	if os.Getenv("SEEDINIT_TPM_VIA_OSFILE") == "1" {
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tpm = Stream{f}
	} else {
		d, err := OpenDevice(dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		tpm = d
	}
	before := readPCR(t, tpm, PCR)
	var digests [][32]byte
	failed := 0
	for i := range n {
		d := sha256.Sum256([]byte(strconv.Itoa(i)))
		if err := Extend(tpm, PCR, d); err != nil {
			failed++
			t.Errorf("extend %d: %v", i, err)
			if Reached(err) {
				// The TPM may have extended it: the replay cannot say.
				break
			}
			continue
		}
		digests = append(digests, d)
	}
	after := readPCR(t, tpm, PCR)
	replayed := after == Replay(before, digests...)
	fmt.Printf("E2E: tpm extends=%d failed=%d replayed=%v\n", len(digests), failed, replayed)
	if !replayed {
		t.Errorf("PCR %d = %x, replayed %x", PCR, after, Replay(before, digests...))
	}
}
