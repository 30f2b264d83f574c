package boot

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/measure"
)

// flakyTPM answers every command but fails the one numbered fail (from
// 1): before it reaches the TPM, or after.
type flakyTPM struct {
	n, fail int
	reached bool
}

func (f *flakyTPM) Transact(cmd []byte) ([]byte, error) {
	f.n++
	if f.n == f.fail {
		if f.reached {
			return nil, errors.New("no answer from /dev/tpmrm0 within 20s")
		}
		return nil, &measure.SendError{Err: errors.New("write /dev/tpmrm0: device busy")}
	}
	ok := binary.BigEndian.AppendUint16(nil, 0x8002)
	ok = binary.BigEndian.AppendUint32(ok, 10)
	return binary.BigEndian.AppendUint32(ok, 0), nil
}

// Every extend that reached the TPM is in the log, the one whose answer
// was lost marked unconfirmed; the error says what was measured, what may
// have been and what was not.
func TestMeasurePartsReportsWhatWasMeasured(t *testing.T) {
	sd := &seed.Seed{MetaRaw: []byte("instance-id: i\n"), UserData: []byte("#cloud-config\n"), VendorData: []byte("v"), NetworkConfig: []byte("version: 2\n")}
	nolog := func(string, ...any) {}
	events, err := measureParts(&flakyTPM{}, sd, nolog)
	if err != nil || len(events) != 4 {
		t.Fatalf("a TPM that answers: %d events, %v", len(events), err)
	}
	events, err = measureParts(&flakyTPM{fail: 2, reached: true}, sd, nolog)
	if len(events) != 2 || events[0].Unconfirmed || !events[1].Unconfirmed || events[1].Part != "user-data" {
		t.Errorf("answer lost: events %+v", events)
	}
	want := "measured: meta-data; user-data unconfirmed (its command reached the TPM, its answer did not come: logged as unconfirmed); not measured: vendor-data, network-config"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("answer lost: %v\nwant %q", err, want)
	}
	events, err = measureParts(&flakyTPM{fail: 1}, sd, nolog)
	if len(events) != 0 || err == nil || !strings.Contains(err.Error(), "measured: none; not measured: meta-data, user-data, vendor-data, network-config") {
		t.Errorf("never sent: events %+v, %v", events, err)
	}
	root, err := rootfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := keepMeasureLog(root, []measure.Event{{PCR: 12, Part: "user-data", Digest: "sha256:00", Unconfirmed: true}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root.Dir(), measureLogPath))
	if !strings.Contains(string(b), `"unconfirmed":true`) {
		t.Errorf("log %s", b)
	}
}
