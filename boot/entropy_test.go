package boot

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"

	"github.com/seedinit/seedinit/internal/testenv"
)

// Only seedinit's own seed, written on this machine, is credited; a seed
// baked into a golden image, one in an older format, systemd's, or any on
// a machine with no identity is mixed in and not credited, and systemd's
// file is never removed.
func TestSeedEntropyCreditsOnlyThisMachinesSeed(t *testing.T) {
	thisMachine := machineTag("6F5B5E8A-0D0E-4D4E-9D7B-1A2B3C4D5E6F")
	otherMachine := machineTag("0c1e2e00-aaaa-bbbb-cccc-0123456789ab")
	if thisMachine == nil || otherMachine == nil || bytes.Equal(thisMachine, otherMachine) {
		t.Fatal("machine tags not made from real UUIDs")
	}
	random := bytes.Repeat([]byte{0xa5}, randomSeedSize)
	systemd := bytes.Repeat([]byte{0x5a}, randomSeedSize)
	for _, tc := range []struct {
		name     string
		ours     []byte // content of seedinit's file, nil for none
		machine  []byte
		credited bool
		removed  bool
	}{
		{"written on this machine", encodeSeed(thisMachine, random), thisMachine, true, true},
		{"baked into an image on another machine", encodeSeed(otherMachine, random), thisMachine, false, false},
		{"an older seedinit's bare seed", random, thisMachine, false, false},
		{"no identity to check against", encodeSeed(thisMachine, random), nil, false, false},
		{"a zero tag from a machine without identity", encodeSeed(nil, random), nil, false, false},
		{"only systemd's", nil, thisMachine, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := rootfs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if tc.ours != nil {
				if err := root.WriteFile(RandomSeedFile, tc.ours, 0o600, rootfs.KeepOwner); err != nil {
					t.Fatal(err)
				}
			}
			if err := root.WriteFile(SystemdRandomSeedFile, systemd, 0o600, rootfs.KeepOwner); err != nil {
				t.Fatal(err)
			}
			var credited, mixed [][]byte
			creditEntropy = func(b []byte) error { credited = append(credited, b); return nil }
			mixEntropy = func(b []byte) error { mixed = append(mixed, b); return nil }
			t.Cleanup(func() { creditEntropy, mixEntropy = creditToPool, mixIntoPool })

			seedEntropyFromRoot(slog.New(slog.DiscardHandler), root, tc.machine)

			if tc.credited != (len(credited) == 1 && bytes.Equal(credited[0], random)) || (!tc.credited && len(credited) > 0) {
				t.Errorf("credited %d seeds, want credited=%v", len(credited), tc.credited)
			}
			for _, c := range credited {
				if bytes.Equal(c, systemd) {
					t.Error("systemd's seed was credited")
				}
			}
			if tc.ours != nil && !tc.credited && (len(mixed) == 0 || !bytes.Equal(mixed[0], random)) {
				t.Errorf("a seed not credited was not mixed in either (mixed %d)", len(mixed))
			}
			if !bytes.Equal(mixed[len(mixed)-1], systemd) {
				t.Error("systemd's seed was not mixed in")
			}
			if got := !root.Exists(RandomSeedFile); tc.ours != nil && got != tc.removed {
				t.Errorf("seedinit's seed removed = %v, want %v", got, tc.removed)
			}
			if !root.Exists(SystemdRandomSeedFile) {
				t.Error("systemd's seed file was removed")
			}
		})
	}
}

func TestMachineTagRefusesPlaceholders(t *testing.T) {
	for _, u := range []string{"", "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "Not Settable", "123"} {
		if machineTag(u) != nil {
			t.Errorf("machineTag(%q) gave a tag", u)
		}
	}
	if !bytes.Equal(machineTag("6F5B5E8A-0D0E-4D4E-9D7B-1A2B3C4D5E6F\n"), machineTag("6f5b5e8a-0d0e-4d4e-9d7b-1a2b3c4d5e6f")) {
		t.Error("the tag depends on the UUID's case or the newline")
	}
}

func TestSavedSeedIsTaggedAndReadBack(t *testing.T) {
	if !PoolReady() {
		testenv.Skip(t, "the pool is not ready on this machine")
	}
	root, err := rootfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tag := machineTag("6F5B5E8A-0D0E-4D4E-9D7B-1A2B3C4D5E6F")
	if err := saveRandomSeed(root, tag); err != nil {
		t.Fatal(err)
	}
	b, err := root.ReadFile(RandomSeedFile)
	if err != nil {
		t.Fatal(err)
	}
	got, data, ok := decodeSeed(b)
	if !ok || !bytes.Equal(got, tag) || len(data) != randomSeedSize {
		t.Fatalf("saved seed: ok=%v tag=%x, %d bytes", ok, got, len(data))
	}
}
