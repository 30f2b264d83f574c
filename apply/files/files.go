// Package files implements cloud-init's write_files and
// write_files_deferred modules: files written into the target with their
// content decoded, their owner resolved in the target's own user database
// and their mode set, each one atomically.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/target"
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

func writeFiles(ctx context.Context, env *apply.Env, deferred bool) error {
	items, ok, err := env.Config.List("write_files")
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	if !ok || len(items) == 0 {
		return apply.Skip("no write_files in the config")
	}
	var errs []error
	var users *userDB
	written := 0
	for i, item := range items {
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
		if err := writeEntry(ctx, env, e, users); err != nil {
			errs = append(errs, fmt.Errorf("write_files: item %d (%s): %w", e.Index, e.Path, err))
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

func writeEntry(ctx context.Context, env *apply.Env, e *Entry, users *userDB) error {
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
		owner = target.KeepOwner
	}
	content, ok := entryContent(ctx, env, e)
	if !ok {
		return nil
	}
	if e.Append {
		old, err := env.Root.ReadFile(e.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// cloud-init appends and then sets the mode and owner it was given,
		// on the existing file too.
		return env.Root.WriteFile(e.Path, append(old, content...), e.Mode, owner)
	}
	_, err = env.Root.WriteFileIfChanged(e.Path, content, e.Mode, owner)
	return err
}

// entryContent is the item's source download, or its content when there is
// no source or the download fails. A failed download with no content to
// fall back to skips the item with a warning, as cloud-init does.
func entryContent(ctx context.Context, env *apply.Env, e *Entry) ([]byte, bool) {
	if e.Source == nil {
		return e.Content, true
	}
	b, err := fetchSource(ctx, env, e.Source)
	if err == nil {
		return b, true
	}
	if len(e.Content) == 0 {
		env.Warn("write_files: item %d (%s): fetch source %s: %s; no content to fall back to: not written", e.Index, e.Path, seed.RedactURL(e.Source.URI), seed.RedactError(err, e.Source.URI))
		return nil, false
	}
	env.Warn("write_files: item %d (%s): fetch source %s: %s; writing its content instead", e.Index, e.Path, seed.RedactURL(e.Source.URI), seed.RedactError(err, e.Source.URI))
	return e.Content, true
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
// fetches http(s) ones.
func fetchSource(ctx context.Context, env *apply.Env, src *Source) ([]byte, error) {
	u, err := url.Parse(src.URI)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		return fetchHTTP(ctx, src.URI, src.Headers)
	case "file", "":
		p := u.Path
		if u.Scheme == "" {
			p = src.URI
		}
		f, err := env.Root.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, fetchMaxSize+1))
		if err != nil {
			return nil, err
		}
		if len(b) > fetchMaxSize {
			return nil, fmt.Errorf("%s is larger than %d bytes", p, fetchMaxSize)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
}

// userDB is the target's /etc/passwd and /etc/group: owners are the
// target's users, which need not exist on the host that runs seedinit.
type userDB struct {
	users, groups map[string]int
}

func loadUserDB(root *target.Root) *userDB {
	return &userDB{users: readIDs(root, "/etc/passwd"), groups: readIDs(root, "/etc/group")}
}

// readIDs maps names to the numeric id in the third field of a
// passwd/group style file; the first entry for a name wins, as getpwnam's.
func readIDs(root *target.Root, file string) map[string]int {
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

func (db *userDB) owner(user, group string) (target.Owner, error) {
	o := target.KeepOwner
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
