// Package files implements cloud-init's write_files and
// write_files_deferred modules: files written into the target with their
// content decoded, their owner resolved in the target's own user database
// and their mode set, each one atomically.
package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

func init() {
	apply.Register(apply.Module{Name: "write_files", Frequency: apply.PerInstance, Keys: []string{"write_files"}, Run: runWriteFiles})
	apply.Register(apply.Module{Name: "write_files_deferred", Frequency: apply.PerInstance, Keys: []string{"write_files"}, Run: runWriteFilesDeferred})
}

func runWriteFiles(ctx context.Context, env *apply.Env) error {
	return writeFiles(ctx, env, false)
}

// runWriteFilesDeferred writes the items with defer: true, in the final
// stage, once packages (and the users they create) are installed.
func runWriteFilesDeferred(ctx context.Context, env *apply.Env) error {
	return writeFiles(ctx, env, true)
}

// Limits on what one config may ask of write_files. cloud-init has none;
// seedinit runs in PID 1 on machines with 512 MiB, where a config that
// asks for more than these is an attack or a mistake, not a real need.
const (
	// maxItems bounds the write_files list. Real configs have tens of
	// items; each costs a flushed file (about 1 ms here, tens of ms on
	// an appliance's flash).
	maxItems = 1000
	// maxContent bounds what one item writes once decoded (or fetched),
	// so that a small gzip bomb in user-data cannot fill the target.
	maxContent = 64 << 20
	// maxTotal bounds what all the items of one run write together:
	// with 16 MiB of user-data, thousands of small gzip bombs of
	// maxContent each would otherwise mean hours of decompression and a
	// full disk.
	maxTotal = 256 << 20
)

func writeFiles(ctx context.Context, env *apply.Env, deferred bool) error {
	items, ok, err := env.Config.List("write_files")
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	if !ok || len(items) == 0 {
		return apply.Skip("no write_files in the config")
	}
	if len(items) > limits.items {
		return fmt.Errorf("write_files: %d items, more than the %d one config may have (item %d%s is the first past the limit): none written",
			len(items), limits.items, limits.items, itemPath(items[limits.items]))
	}
	var errs []error
	var users *userDB
	budget := &budget{left: limits.total}
	written := 0
	for i, item := range items {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("write_files: stopped at item %d: %w", i, err))
			break
		}
		e, err := DecodeEntry(i, item)
		if err != nil {
			// Report a bad item once, from the module that runs first.
			if !deferred {
				errs = append(errs, fmt.Errorf("write_files: %w", err))
			}
			continue
		}
		if e.Defer != deferred {
			continue
		}
		if users == nil {
			users = loadUserDB(env.Root)
		}
		if err := writeEntry(ctx, env, e, users, budget); err != nil {
			errs = append(errs, fmt.Errorf("write_files: item %d (%s): %w", e.Index, e.Path, err))
			if errors.Is(err, errOverTotal) {
				if n := countLeft(items[i+1:], deferred); n > 0 {
					errs = append(errs, fmt.Errorf("write_files: the %d item(s) after item %d not written: the content they may write in all is used up", n, e.Index))
				}
				break
			}
			continue
		}
		written++
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if written == 0 {
		if deferred {
			return apply.Skip("no write_files item has defer: true")
		}
		return apply.Skip("every write_files item has defer: true")
	}
	return nil
}

// itemPath is ", PATH" for an item that names its path, for messages.
func itemPath(item any) string {
	if m, ok := item.(map[string]any); ok {
		if p, ok := m["path"].(string); ok {
			return ", " + abbrev(p)
		}
	}
	if m, ok := item.(apply.Config); ok {
		if p, ok := m["path"].(string); ok {
			return ", " + abbrev(p)
		}
	}
	return ""
}

// abbrev shortens a hostile path for a message.
func abbrev(p string) string {
	if len(p) > 80 {
		return fmt.Sprintf("%s...(%d bytes)", p[:80], len(p))
	}
	return p
}

// countLeft counts the items this module would still have written.
func countLeft(items []any, deferred bool) int {
	n := 0
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			if d, err := optionalBool(apply.Config(m), "defer"); err == nil && d != deferred {
				continue
			}
		}
		n++
	}
	return n
}

// limits are the limits in force; tests lower them.
var limits = struct {
	items       int
	item, total int64
}{maxItems, maxContent, maxTotal}

// errOverTotal is wrapped by the error of the item whose content passes
// the total.
var errOverTotal = errors.New("over the total")

// overError is content past a limit: the item's, or the run's total.
type overError struct {
	limit int64
	total bool
}

func (e *overError) Error() string {
	if e.total {
		return fmt.Sprintf("the items' content passes %s in all once decoded, the most one run of write_files writes", size(e.limit))
	}
	return fmt.Sprintf("the content passes %s once decoded, the most one item may write", size(e.limit))
}

func (e *overError) Is(target error) bool { return e.total && target == errOverTotal }

// size is n in the unit that reads best in a message.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// budget is what is left of the total.
type budget struct{ left int64 }

// limited counts r's bytes against the item's and the run's limits, and
// fails the read that passes either.
func (b *budget) limited(r io.Reader) io.Reader {
	return &limitedReader{r: r, item: limits.item, b: b}
}

type limitedReader struct {
	r    io.Reader
	item int64
	b    *budget
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.item -= int64(n)
	l.b.left -= int64(n)
	switch {
	case l.item < 0:
		return 0, &overError{limit: limits.item}
	case l.b.left < 0:
		return 0, &overError{limit: limits.total, total: true}
	}
	return n, err
}

func writeEntry(ctx context.Context, env *apply.Env, e *Entry, users *userDB, b *budget) error {
	for _, w := range e.Warnings {
		env.Warn("write_files: item %d (%s): %s", e.Index, e.Path, w)
	}
	owner, err := users.owner(e.User, e.Group)
	if err != nil {
		return err
	}
	if !e.OwnerGiven && os.Geteuid() != 0 {
		// Only root can give files away; an unprivileged run (a test
		// root) keeps its own ids rather than fail on the default owner.
		owner = rootfs.KeepOwner
	}
	content, ok := entryContent(ctx, env, e)
	if !ok {
		return nil
	}
	if c, ok := content.(io.Closer); ok {
		defer c.Close()
	}
	src := b.limited(content)
	if e.Append {
		// cloud-init appends and then sets the mode and owner it was given,
		// on the existing file too.
		err = appendOnce(env, e, src, owner)
	} else {
		_, err = env.Root.WriteFileFromIfChanged(e.Path, src, e.Mode, owner)
	}
	return contentError(err)
}

// contentError is err without the writer's "write PATH:" when the content
// itself failed: the item's message names the path already.
func contentError(err error) error {
	var step *stepError
	if errors.As(err, &step) {
		return step
	}
	var over *overError
	if errors.As(err, &over) {
		return over
	}
	return err
}

// entryContent is the item's source download, or its content when there is
// no source or the download fails. A failed download with no content to
// fall back to skips the item with a warning, as cloud-init does.
func entryContent(ctx context.Context, env *apply.Env, e *Entry) (io.Reader, bool) {
	if e.Source == nil {
		return e.ContentReader(), true
	}
	r, err := fetchSource(ctx, env, e.Source)
	if err == nil {
		return r, true
	}
	if len(e.Content) == 0 {
		env.Warn("write_files: item %d (%s): fetch source %s: %s; no content to fall back to: not written", e.Index, e.Path, seed.RedactURL(e.Source.URI), seed.RedactError(err, e.Source.URI))
		return nil, false
	}
	env.Warn("write_files: item %d (%s): fetch source %s: %s; writing its content instead", e.Index, e.Path, seed.RedactURL(e.Source.URI), seed.RedactError(err, e.Source.URI))
	return e.ContentReader(), true
}

const (
	fetchTries   = 3
	fetchTimeout = 10 * time.Second
	fetchMaxSize = maxContent
)

// fetchHTTP retrieves an http(s) source through seed's client for the
// user's URLs, trying a few times, again only on errors a retry may cure.
func fetchHTTP(ctx context.Context, uri string, headers map[string]string) ([]byte, error) {
	var lastErr error
	for try := range fetchTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(try) * time.Second):
			}
		}
		b, err := seed.Web(ctx, seed.WebRequest{URL: uri, Header: headers, Timeout: fetchTimeout, MaxSize: fetchMaxSize})
		if err == nil {
			return b, nil
		}
		lastErr = err
		if !retryable(err) {
			break
		}
	}
	return nil, lastErr
}

// retryable: a server error or a failed connection may pass; a client
// error or an oversized answer will not.
func retryable(err error) bool {
	var status *seed.WebStatusError
	if errors.As(err, &status) {
		return status.Code >= 500
	}
	return !errors.Is(err, seed.ErrTooLarge) && !errors.Is(err, context.Canceled)
}

// fetchSource reads file:// sources (and bare paths) from the target, and
// fetches http(s) ones. A regular file is streamed from where it lies
// (the caller closes it); one over fetchMaxSize fails the fetch, so that
// the item's content is written instead, as before it is read.
func fetchSource(ctx context.Context, env *apply.Env, src *Source) (io.Reader, error) {
	u, err := url.Parse(src.URI)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		b, err := fetchHTTP(ctx, src.URI, src.Headers)
		if err != nil {
			return nil, err
		}
		return bytes.NewReader(b), nil
	case "file", "":
		p := u.Path
		if u.Scheme == "" {
			p = src.URI
		}
		f, err := env.Root.Open(p)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if fi.Mode().IsRegular() {
			if fi.Size() > fetchMaxSize {
				f.Close()
				return nil, fmt.Errorf("%s is larger than %d bytes", p, fetchMaxSize)
			}
			return f, nil
		}
		// A device or a pipe has no size to check first: read it here,
		// to the limit.
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, fetchMaxSize+1))
		if err != nil {
			return nil, err
		}
		if len(b) > fetchMaxSize {
			return nil, fmt.Errorf("%s is larger than %d bytes", p, fetchMaxSize)
		}
		return bytes.NewReader(b), nil
	}
	return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
}

// userDB is the target's /etc/passwd and /etc/group: owners are the
// target's users, which need not exist on the host that runs seedinit.
type userDB struct {
	users, groups map[string]int
}

func loadUserDB(root *rootfs.Root) *userDB {
	return &userDB{users: readIDs(root, "/etc/passwd"), groups: readIDs(root, "/etc/group")}
}

// readIDs maps names to the numeric id in the third field of a
// passwd/group style file; the first entry for a name wins, as getpwnam's.
func readIDs(root *rootfs.Root, file string) map[string]int {
	ids := map[string]int{}
	b, err := root.ReadFile(file)
	if err != nil {
		return ids
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 || f[0] == "" || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], "+") || strings.HasPrefix(f[0], "-") {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err != nil || id < 0 {
			continue
		}
		if _, dup := ids[f[0]]; !dup {
			ids[f[0]] = id
		}
	}
	return ids
}

func (db *userDB) owner(user, group string) (rootfs.Owner, error) {
	o := rootfs.KeepOwner
	if user != "" {
		id, ok := db.users[user]
		if !ok && user == "root" {
			id, ok = 0, true
		}
		if !ok {
			return o, fmt.Errorf("unknown user %q in the target's /etc/passwd", user)
		}
		o.UID = id
	}
	if group != "" {
		id, ok := db.groups[group]
		if !ok && group == "root" {
			id, ok = 0, true
		}
		if !ok {
			return o, fmt.Errorf("unknown group %q in the target's /etc/group", group)
		}
		o.GID = id
	}
	return o, nil
}
