package system

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testLocaleArchive builds a glibc locale-archive holding names, laid
// out as localedef lays it out: header, name hash table (with an empty
// slot), string table.
func testLocaleArchive(order binary.ByteOrder, names ...string) []byte {
	slots := len(names) + 1
	hashOffset := localeArchiveHeader
	stringOffset := hashOffset + slots*localeNameEntry
	var strs []byte
	entries := make([]byte, slots*localeNameEntry)
	for i, n := range names {
		// Slot 0 stays empty, as unused hash slots are.
		e := entries[(i+1)*localeNameEntry:]
		order.PutUint32(e, uint32(i+7))
		order.PutUint32(e[4:], uint32(stringOffset+len(strs)))
		strs = append(append(strs, n...), 0)
	}
	head := make([]byte, localeArchiveHeader)
	for i, v := range []uint32{localeArchiveMagic, 0, uint32(hashOffset), uint32(len(names)), uint32(slots), uint32(stringOffset), uint32(len(strs)), uint32(len(strs))} {
		order.PutUint32(head[i*4:], v)
	}
	return append(append(head, entries...), strs...)
}

func TestLocaleArchiveNames(t *testing.T) {
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		got, err := localeArchiveNames(testLocaleArchive(order, "C.utf8", "en_US.utf8", "de_DE@euro"))
		if err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		if diff := cmp.Diff([]string{"C.utf8", "en_US.utf8", "de_DE@euro"}, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", order, diff)
		}
	}
	good := testLocaleArchive(binary.LittleEndian, "en_US.utf8")
	bad := map[string][]byte{
		"short":            good[:10],
		"bad magic":        append([]byte{1, 2, 3, 4}, good[4:]...),
		"truncated tables": good[:len(good)-3],
	}
	unterminated := append([]byte{}, good...)
	unterminated[len(unterminated)-1] = 'x'
	bad["unterminated name"] = unterminated
	outside := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(outside[localeArchiveHeader+localeNameEntry+4:], 3)
	bad["name outside the strings"] = outside
	for name, data := range bad {
		if names, err := localeArchiveNames(data); err == nil {
			t.Errorf("%s: got %q, want an error", name, names)
		}
	}
}

func FuzzLocaleArchiveNames(f *testing.F) {
	f.Add(testLocaleArchive(binary.LittleEndian, "C.utf8", "en_US.utf8"))
	f.Add(testLocaleArchive(binary.BigEndian, "x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		localeArchiveNames(data) // must not panic on any input
	})
}

func TestNormalizeLocale(t *testing.T) {
	for in, want := range map[string]string{
		"en_US.UTF-8":       "en_US.utf8",
		"en_US.utf8":        "en_US.utf8",
		"de_DE.ISO-8859-15": "de_DE.iso885915",
		"ja_JP.eucJP":       "ja_JP.eucjp",
		"sr_RS.UTF-8@latin": "sr_RS.utf8@latin",
		"de_DE@euro":        "de_DE@euro",
		"en_US":             "en_US",
		"xx_YY.8859":        "xx_YY.iso8859",
	} {
		if got := normalizeLocale(in); got != want {
			t.Errorf("normalizeLocale(%q) = %q, want %q", in, got, want)
		}
	}
}
