// Package mime builds multipart user-data as `cloud-init devel make-mime`
// does: each file a text/<type> part, base64 in UTF-8, with its file name
// in Content-Disposition, so that cloud-init and seed.ProcessUserData split
// it into the same parts.
package mime

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/seedinit/seedinit/internal/earlyrand"
)

// Part is one attachment: -a FILENAME:TYPE.
type Part struct {
	// Filename is written into the part's Content-Disposition as given.
	Filename string
	// Type is the subtype after "text/": "cloud-config", "x-shellscript".
	Type    string
	Content []byte
}

// contentTypes are the types cloud-init 22.4.2 has handlers for (the
// values of its INCLUSION_TYPES_MAP).
var contentTypes = []string{
	"text/cloud-boothook",
	"text/cloud-config",
	"text/cloud-config-archive",
	"text/cloud-config-jsonp",
	"text/jinja2",
	"text/part-handler",
	"text/x-include-once-url",
	"text/x-include-url",
	"text/x-shellscript",
	"text/x-shellscript-per-boot",
	"text/x-shellscript-per-instance",
	"text/x-shellscript-per-once",
}

// ListTypes is `make-mime --list-types`: the known types without "text/",
// sorted.
func ListTypes() []string {
	out := make([]string, len(contentTypes))
	for i, t := range contentTypes {
		out[i] = strings.TrimPrefix(t, "text/")
	}
	sort.Strings(out)
	return out
}

// ParseAttach splits a -a argument at its first colon into the file name
// and the type, trimming spaces around the type, as cloud-init does.
func ParseAttach(arg string) (filename, typ string, err error) {
	filename, typ, ok := strings.Cut(arg, ":")
	if !ok {
		return "", "", fmt.Errorf("parse attachment %q: want <file>:<content-type>", arg)
	}
	return filename, strings.TrimSpace(typ), nil
}

// UnknownTypes are cloud-init's complaints about parts whose type it has
// no handler for ("content type 'text/bogus' for attachment 1 may be
// incorrect!"). make-mime prints each as "ERROR: <msg>" (or "WARNING:"
// with --force), then "Invalid content-types, override with --force", and
// without --force exits 1 without writing the message.
func UnknownTypes(parts []Part) []string {
	var out []string
	for i, p := range parts {
		ct := strings.ToLower("text/" + p.Type)
		if !known(ct) {
			out = append(out, fmt.Sprintf("content type '%s' for attachment %d may be incorrect!", ct, i+1))
		}
	}
	return out
}

func known(ct string) bool {
	for _, t := range contentTypes {
		if t == ct {
			return true
		}
	}
	return false
}

// MakeMIME builds the multipart message, ending with a newline as
// make-mime prints it. Every part's content must be UTF-8, because
// cloud-init reads the files as text; the error names each part that is
// not, and no message is made.
func MakeMIME(parts []Part) ([]byte, error) {
	boundary, err := randomBoundary()
	if err != nil {
		return nil, fmt.Errorf("make MIME boundary: %w", err)
	}
	return makeMIME(parts, boundary)
}

// randomBoundary is Python email's: fifteen "=", a random number of 19
// digits, "==". Base64 bodies cannot contain it. The number only needs to
// be unlikely in the parts, so it comes from earlyrand, which never
// blocks; crypto/rand.Int only draws it, from the reader it is given.
func randomBoundary() (string, error) {
	max := new(big.Int).SetUint64(1<<63 - 1)
	n, err := rand.Int(earlyrand.Reader, max)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("===============%019d==", n), nil
}

func makeMIME(parts []Part, boundary string) ([]byte, error) {
	var errs []error
	for i, p := range parts {
		if !utf8.Valid(p.Content) {
			errs = append(errs, fmt.Errorf("attach %s (attachment %d): content is not UTF-8 text", p.Filename, i+1))
		}
		if !utf8.ValidString(p.Filename) || !utf8.ValidString(p.Type) {
			errs = append(errs, fmt.Errorf("attach %q (attachment %d): file name or type is not UTF-8", p.Filename, i+1))
		}
		if strings.ContainsAny(p.Filename, "\r\n") || strings.ContainsAny(p.Type, "\r\n;\" ") {
			errs = append(errs, fmt.Errorf("attach %s (attachment %d): file name or type would break the headers", p.Filename, i+1))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\n")
	b.WriteString("MIME-Version: 1.0\n\n")
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("--" + boundary + "\n")
		b.WriteString("Content-Type: text/" + p.Type + "; charset=\"utf-8\"\n")
		b.WriteString("MIME-Version: 1.0\n")
		b.WriteString("Content-Transfer-Encoding: base64\n")
		b.WriteString("Content-Disposition: attachment; filename=\"" + p.Filename + "\"\n\n")
		b.WriteString(base64Lines(p.Content))
	}
	if len(parts) == 0 {
		// Python writes the opening boundary even with no parts.
		b.WriteString("--" + boundary + "\n")
	}
	b.WriteString("\n--" + boundary + "--\n")
	return []byte(b.String()), nil
}

// base64Lines is Python's base64 body encoding: lines of 76 characters,
// each ending in a newline; nothing at all for empty content.
func base64Lines(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	if enc != "" {
		b.WriteString(enc + "\n")
	}
	return b.String()
}
