package system

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"strings"
	"unicode"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// glibc keeps compiled locales in /usr/lib/locale: most in the
// locale-archive file, some (C.utf8, localedef --no-archive) as
// directories, both under the normalized name ("en_US.utf8").
const (
	localeDir          = "/usr/lib/locale"
	localeArchive      = localeDir + "/locale-archive"
	localeArchiveMagic = 0xde020109
	// The archive header (struct locarhead) is 14 uint32s; the name hash
	// table's entries (struct namehashent) are 3: hash, name offset,
	// record offset.
	localeArchiveHeader = 14 * 4
	localeNameEntry     = 3 * 4
)

// localeState tells whether the target's C library has a locale compiled.
type localeState int

const (
	// localeUnknown: the target keeps no compiled locales (musl, or no
	// glibc locale data at all), so there is nothing to check.
	localeUnknown localeState = iota
	localeMissing
	localeCompiled
)

// compiledLocale looks locale up among the target's compiled locales.
func compiledLocale(root *rootfs.Root, locale string) localeState {
	if fi, err := root.Stat(localeDir); err != nil || !fi.IsDir() {
		return localeUnknown
	}
	name := normalizeLocale(locale)
	if fi, err := root.Stat(localeDir + "/" + name); err == nil && fi.IsDir() {
		return localeCompiled
	}
	data, err := root.ReadFile(localeArchive)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return localeMissing
		}
		return localeUnknown
	}
	names, err := localeArchiveNames(data)
	if err != nil {
		return localeUnknown
	}
	for _, n := range names {
		if n == name {
			return localeCompiled
		}
	}
	return localeMissing
}

// localeArchiveNames lists the locale names in a glibc locale-archive,
// which is written in the byte order of the machine that built it.
func localeArchiveNames(data []byte) ([]string, error) {
	if len(data) < localeArchiveHeader {
		return nil, errors.New("locale-archive: shorter than its header")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if order.Uint32(data) != localeArchiveMagic {
		order = binary.BigEndian
		if order.Uint32(data) != localeArchiveMagic {
			return nil, errors.New("locale-archive: bad magic number")
		}
	}
	field := func(i int) uint64 { return uint64(order.Uint32(data[i*4:])) }
	hashOffset, hashSize := field(2), field(4)
	stringOffset, stringUsed := field(5), field(6)
	size := uint64(len(data))
	if hashOffset+hashSize*localeNameEntry > size || stringOffset+stringUsed > size {
		return nil, errors.New("locale-archive: tables beyond the end of the file")
	}
	var names []string
	for i := uint64(0); i < hashSize; i++ {
		entry := data[hashOffset+i*localeNameEntry:]
		nameOffset := uint64(order.Uint32(entry[4:]))
		if nameOffset == 0 {
			continue // an empty slot
		}
		if nameOffset < stringOffset || nameOffset >= stringOffset+stringUsed {
			return nil, errors.New("locale-archive: a name outside the string table")
		}
		name, _, found := strings.Cut(string(data[nameOffset:stringOffset+stringUsed]), "\x00")
		if !found {
			return nil, errors.New("locale-archive: an unterminated name")
		}
		names = append(names, name)
	}
	return names, nil
}

// normalizeLocale spells a locale name as glibc files it: the codeset
// lower case with only letters and digits ("UTF-8" is "utf8"), "iso"
// before a codeset of digits only.
func normalizeLocale(locale string) string {
	rest, modifier, hasModifier := strings.Cut(locale, "@")
	lang, codeset, hasCodeset := strings.Cut(rest, ".")
	if !hasCodeset {
		return locale
	}
	var b strings.Builder
	digitsOnly := true
	for _, r := range codeset {
		switch {
		case unicode.IsLetter(r):
			b.WriteRune(unicode.ToLower(r))
			digitsOnly = false
		case unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	norm := b.String()
	if digitsOnly {
		norm = "iso" + norm
	}
	name := lang + "." + norm
	if hasModifier {
		name += "@" + modifier
	}
	return name
}
