package mounts

import (
	"regexp"
	"strings"
	"sync"
)

// ownerTag marks the fstab lines this module owns, in the options field,
// exactly as cloud-init tags them, so that either tool can take over the
// lines the other wrote.
const ownerTag = "comment=cloudconfig"

// whitespace is Python's string.whitespace, which cloud-init splits fstab
// lines on.
var whitespace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("[ \t\n\r\x0b\x0c]+") })

// Fstab is /etc/fstab split the way cloud-init reads it: the lines it does
// not own (kept in order) and the ones it owns (replaced on every run).
type Fstab struct {
	Kept  []string
	Owned []string
	// DeviceLines maps each kept line's first field (as split on
	// whitespace, so "" for an indented line) to the last such line.
	DeviceLines map[string]string
}

// ParseFstab splits fstab text into kept and owned lines. It never fails:
// fstab is free text to cloud-init, and lines it does not understand are
// kept as they are.
func ParseFstab(text string) Fstab {
	fs := Fstab{DeviceLines: map[string]string{}}
	if text == "" {
		return fs
	}
	for _, line := range splitLines(text) {
		if strings.Contains(line, ownerTag) {
			fs.Owned = append(fs.Owned, line)
			continue
		}
		first := whitespace().Split(line, 2)[0]
		fs.DeviceLines[first] = line
		fs.Kept = append(fs.Kept, line)
	}
	return fs
}

// splitLines is Python's str.splitlines for the line breaks fstab can
// hold: \n, \r\n and \r; a final break does not start an empty line.
func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.TrimSuffix(text, "\n")
	return strings.Split(text, "\n")
}

// Render is the file content: kept lines, then the owned entries, one per
// line, fields joined by tabs.
func Render(kept []string, entries []Entry) string {
	lines := append([]string(nil), kept...)
	for _, e := range entries {
		lines = append(lines, e.Line())
	}
	return strings.Join(lines, "\n") + "\n"
}

// Entry is one fstab line's six fields.
type Entry [6]string

// Line is the entry as cloud-init writes it, its options tagged as owned.
func (e Entry) Line() string {
	f := e
	f[3] = f[3] + "," + ownerTag
	return strings.Join(f[:], "\t")
}
