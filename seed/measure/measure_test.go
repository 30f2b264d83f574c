package measure

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEventAndReplay(t *testing.T) {
	e, d := EventFor("user-data", []byte("#cloud-config\n"))
	want := sha256.Sum256([]byte("seedinit seed part\x00user-data\x00#cloud-config\n"))
	if d != want || e.PCR != PCR || e.Part != "user-data" || !strings.HasPrefix(e.Digest, "sha256:") {
		t.Errorf("event %+v, digest %x", e, d)
	}
	// The part's name is bound in: the same bytes as another part differ.
	if _, other := EventFor("vendor-data", []byte("#cloud-config\n")); other == d {
		t.Error("two parts with the same content measure the same")
	}
	var zero [32]byte
	step := sha256.Sum256(append(zero[:], d[:]...))
	if Replay(zero, d) != step {
		t.Error("Replay is not SHA-256(PCR || digest)")
	}
	var lines []Event
	for _, l := range bytes.Split(bytes.TrimSpace(MarshalLog([]Event{e, e})), []byte("\n")) {
		var ev Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, ev)
	}
	if len(lines) != 2 || lines[1] != e {
		t.Errorf("log: %+v", lines)
	}
}

// swtpm is a TPM 2.0 answering on a Unix socket, started and cleared.
func swtpm(t *testing.T) net.Conn {
	t.Helper()
	bin, err := exec.LookPath("swtpm")
	if err != nil {
		t.Skip("swtpm is not installed")
	}
	dir := t.TempDir()
	sock, ctrl := filepath.Join(dir, "tpm.sock"), filepath.Join(dir, "ctrl.sock")
	cmd := exec.Command(bin, "socket", "--tpm2", "--tpmstate", "dir="+dir,
		"--server", "type=unixio,path="+sock, "--ctrl", "type=unixio,path="+ctrl,
		"--flags", "not-need-init,startup-clear")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	t.Fatalf("swtpm did not listen: %s", stderr.String())
	return nil
}

// readPCR reads a SHA-256 PCR with TPM2_PCR_Read.
func readPCR(t *testing.T, tpm TPM, pcr int) [32]byte {
	t.Helper()
	cmd := binary.BigEndian.AppendUint16(nil, 0x8001)
	cmd = binary.BigEndian.AppendUint32(cmd, 20)
	cmd = binary.BigEndian.AppendUint32(cmd, 0x0000017E)
	cmd = binary.BigEndian.AppendUint32(cmd, 1)
	cmd = binary.BigEndian.AppendUint16(cmd, tpmAlgSHA256)
	sel := []byte{3, 0, 0, 0}
	sel[1+pcr/8] |= 1 << (pcr % 8)
	cmd = append(cmd, sel...)
	resp, err := tpm.Transact(cmd)
	n := len(resp)
	if err != nil || n < 10 || binary.BigEndian.Uint32(resp[6:10]) != 0 {
		t.Fatalf("TPM2_PCR_Read: %d bytes, %v, %x", n, err, resp[:n])
	}
	// counter, one selection (hash, size 3, 3 bytes), then one digest.
	off := 10 + 4 + 4 + 2 + 1 + 3
	if binary.BigEndian.Uint32(resp[off:]) != 1 || binary.BigEndian.Uint16(resp[off+4:]) != 32 {
		t.Fatalf("TPM2_PCR_Read answer: %x", resp[:n])
	}
	var v [32]byte
	copy(v[:], resp[off+6:off+38])
	return v
}

// swtpm extends as Replay computes: the log replays to the PCR.
func TestExtendAgainstSwtpm(t *testing.T) {
	tpm := Stream{swtpm(t)}
	before := readPCR(t, tpm, PCR)
	var digests [][32]byte
	for _, p := range []struct{ part, content string }{
		{"meta-data", "instance-id: i-1\n"}, {"user-data", "#cloud-config\nhostname: waf-01\n"},
	} {
		_, d := EventFor(p.part, []byte(p.content))
		if err := Extend(tpm, PCR, d); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if got, want := readPCR(t, tpm, PCR), Replay(before, digests...); got != want {
		t.Errorf("PCR %d = %x, replayed %x", PCR, got, want)
	}
	if err := Extend(tpm, 99, [32]byte{}); err == nil || !strings.Contains(err.Error(), "response code") {
		t.Errorf("a PCR that does not exist: %v", err)
	}
}
