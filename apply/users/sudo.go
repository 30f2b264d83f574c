package users

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// The sudoers files cloud-init writes.
const (
	SudoersFile      = "/etc/sudoers"
	CloudSudoersFile = "/etc/sudoers.d/90-cloud-init-users"
)

// now is the clock for file headers; tests pin it.
var now = time.Now

// header is cloud-init's make_header line with seedinit's name.
func header(verb string) string {
	return fmt.Sprintf("# %s by seedinit v. %s on %s", verb, apply.Version, now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
}

var includeDirLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[#|@]includedir\s+(.*)$`) })

// EnsureSudoIncludeDir makes sudoers read dir, as cloud-init's
// ensure_sudo_dir does: an "#includedir dir" line is added to
// /etc/sudoers (created 0440 if missing) unless one ("#" or "@" form)
// names dir already, and dir is made to exist with mode 0750.
func EnsureSudoIncludeDir(root *rootfs.Root, dir string) error {
	data, err := root.ReadFile(SudoersFile)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		m := includeDirLine().FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if included := strings.TrimSpace(m[1]); included != "" && path.Clean(included) == dir {
			found = true
			break
		}
	}
	if !found {
		if !exists {
			content := "# See sudoers(5) for more information on \"#include\" directives:\n\n" + header("Added") + "\n#includedir " + dir + "\n"
			err = root.WriteFile(SudoersFile, []byte(content), 0o440, ownedBy(0, 0))
		} else {
			err = root.AppendFile(SudoersFile, []byte("\n"+header("Added")+"\n#includedir "+dir+"\n"), 0o440, rootfs.KeepOwner)
		}
		if err != nil {
			return fmt.Errorf("include %s in sudoers: %w", dir, err)
		}
	}
	if err := root.MkdirAll(dir, 0o750, ownedBy(0, 0)); err != nil {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	if err := root.Chmod(dir, 0o750); err != nil {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	return nil
}

const userRulesPrefix = "# User rules for "

// SudoRules turns a user's sudo value into rule lines: a string is one
// rule, a list one rule per item. Other types are an error (cloud-init
// raises a TypeError too).
func SudoRules(value any) ([]string, error) {
	var rules []string
	switch v := value.(type) {
	case string:
		rules = []string{v}
	case []any:
		for i, item := range v {
			s, err := apply.AsString(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			rules = append(rules, s)
		}
	default:
		return nil, fmt.Errorf("want a rule or a list of rules, got %s", apply.TypeName(value))
	}
	for i, r := range rules {
		if strings.ContainsAny(r, "\n\r") {
			return nil, fmt.Errorf("rule %d contains a line break", i)
		}
	}
	return rules, nil
}

// WriteSudoRules gives user its rules in file (cloud-init's
// /etc/sudoers.d/90-cloud-init-users by default) in cloud-init's
// write_sudo_rules format: a header when the file is created, then per
// user a blank line, "# User rules for NAME" and "NAME RULE" lines. Where
// cloud-init appends again on every new instance, a user's block that is
// there already is replaced in place, so re-running never duplicates it.
func WriteSudoRules(root *rootfs.Root, user string, rules []string, file string) error {
	if err := writeSudoRules(root, []SudoBlock{{User: user, Rules: rules}}, file); err != nil {
		return fmt.Errorf("write sudo rules for %s: %w", user, err)
	}
	return nil
}

// SudoBlock is one user's sudo rules.
type SudoBlock struct {
	User  string
	Rules []string
}

// writeSudoRules gives each user its block as WriteSudoRules would, one
// user after the other, but reads and writes file once: written per user,
// the file is rewritten whole for each, O(users²) in bytes and a flushed
// file per user.
func writeSudoRules(root *rootfs.Root, blocks []SudoBlock, file string) error {
	if len(blocks) == 0 {
		return nil
	}
	if file == "" {
		file = CloudSudoersFile
	}
	if err := EnsureSudoIncludeDir(root, path.Dir(file)); err != nil {
		return err
	}
	data, err := root.ReadFile(file)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	content := []byte(sudoersWith(data, exists, blocks))
	if !exists {
		return root.WriteFile(file, content, 0o440, ownedBy(0, 0))
	}
	fi, err := root.Stat(file)
	if err != nil {
		return err
	}
	_, err = root.WriteFileIfChanged(file, content, fi.Mode().Perm(), statOwner(fi))
	return err
}

// sudoersWith is the content of a sudoers file that had data (or did not
// exist) once each block is put in it, in order.
func sudoersWith(data []byte, exists bool, blocks []SudoBlock) string {
	var doc *sudoDoc
	if exists {
		doc = parseSudoDoc(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
	} else {
		doc = parseSudoDoc([]string{header("Created")})
	}
	for _, b := range blocks {
		lines := []string{userRulesPrefix + b.User}
		for _, r := range b.Rules {
			lines = append(lines, b.User+" "+r)
		}
		doc.put(lines)
	}
	return doc.String()
}

// sudoDoc is a sudoers file as write_sudo_rules edits it: runs of plain
// lines, and user blocks (a "# User rules for" line and the lines after
// it up to a blank line or the next such line), each user's first block
// found by name in O(1).
type sudoDoc struct {
	chunks [][]string
	blocks map[string]int // header line -> index in chunks of its first block
}

func parseSudoDoc(lines []string) *sudoDoc {
	d := &sudoDoc{blocks: map[string]int{}}
	var plain []string
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], userRulesPrefix) {
			plain = append(plain, lines[i])
			i++
			continue
		}
		if plain != nil {
			d.chunks, plain = append(d.chunks, plain), nil
		}
		end := i + 1
		for end < len(lines) && lines[end] != "" && !strings.HasPrefix(lines[end], userRulesPrefix) {
			end++
		}
		d.addBlock(lines[i:end])
		i = end
	}
	if plain != nil {
		d.chunks = append(d.chunks, plain)
	}
	return d
}

func (d *sudoDoc) addBlock(block []string) {
	if _, seen := d.blocks[block[0]]; !seen {
		d.blocks[block[0]] = len(d.chunks)
	}
	d.chunks = append(d.chunks, block)
}

// put replaces the first block with block's header, or appends a blank
// line and block, as WriteSudoRules edits the file. The lines of block
// are parsed again, as the next edit of the file would read them: a user
// whose name starts with "#" can make a rule line that reads as a header.
func (d *sudoDoc) put(block []string) {
	parsed := parseSudoDoc(block)
	i, ok := d.blocks[block[0]]
	if !ok {
		d.chunks = append(d.chunks, []string{""})
		for _, c := range parsed.chunks {
			d.addBlock(c)
		}
		return
	}
	if len(parsed.chunks) == 1 {
		d.chunks[i] = block
		return
	}
	// The rare case: the block is several blocks. Splice them in and
	// index them again from scratch.
	rest := append([][]string{}, d.chunks[i+1:]...)
	d.chunks = append(append(d.chunks[:i], parsed.chunks...), rest...)
	d.blocks = map[string]int{}
	for j, c := range d.chunks {
		if strings.HasPrefix(c[0], userRulesPrefix) {
			if _, seen := d.blocks[c[0]]; !seen {
				d.blocks[c[0]] = j
			}
		}
	}
}

func (d *sudoDoc) String() string {
	var b strings.Builder
	for _, c := range d.chunks {
		for _, l := range c {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
