package users

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// The account files change together, as one transaction: a user names
// its group (passwd), has its password (shadow), is a member of groups
// (group, gshadow) and holds subordinate ids (subuid, subgid), and a cut
// between two of those writes used to leave a group without its user,
// which the next run then refused to create ("a group named pcadmin
// exists already"), or a user without its shadow entry.
//
// No order of the writes avoids that: shadow-utils' useradd writes passwd
// and shadow first (a user whose group is missing), systemd-sysusers
// groups first (a group without its user), and each relies on a run that
// finds the other half. So the changed files go in one rootfs.Batch: all
// of them are staged and flushed, a journal is made durable, then they
// are renamed into place, and the next Open finishes a journal a cut left
// (every renamed file new) or throws away what was staged without one
// (every file old). Every prefix of the writes is one of those two.
//
// What a transaction cannot hold is the homes: they are made after it,
// from the skeleton, file by file. The users whose homes are still to be
// made are saved in the same transaction (pendingHomesFile), so that a run
// after a cut knows which existing users are its own, half made, and
// completes their homes instead of taking them for users it must leave
// alone.
const (
	// accountsJournal is the transaction's journal, in /etc.
	accountsJournal = ".seedinit-accounts.journal"
	// pendingHomesFile lists, one per line, the users created whose homes
	// are still to be made; it is gone when there are none.
	pendingHomesFile = "/etc/.seedinit-homes-pending"
)

// pendingFile is a file of the account transaction, with what to note
// once it is written.
type pendingFile struct {
	path  string
	data  []byte
	mode  fs.FileMode
	owner rootfs.Owner
	// remove is set to remove the file rather than write it.
	remove bool
	saved  func()
}

// recoverAccounts finishes or undoes the account transaction a power cut
// stopped. It reports whether one was finished.
func recoverAccounts(root *rootfs.Root) (bool, error) {
	done, err := root.RecoverBatch("/etc", accountsJournal)
	if err != nil {
		return false, fmt.Errorf("read account database: %w", err)
	}
	return done, nil
}

// saveTogether writes files as one transaction when they are all in /etc
// (symlinks resolved), as they are but on unusual systems; otherwise one
// by one, groups first, as before transactions.
func saveTogether(root *rootfs.Root, files []pendingFile) error {
	if len(files) == 0 {
		return nil
	}
	etc, err := root.Resolve("/etc")
	if err != nil {
		return err
	}
	together := true
	for _, f := range files {
		rel, err := root.Resolve(f.path)
		if err != nil {
			return err
		}
		together = together && path.Dir(rel) == etc
	}
	if !together {
		var errs []error
		for _, f := range files {
			var err error
			if f.remove {
				err = root.Remove(f.path)
			} else {
				err = root.WriteFile(f.path, f.data, f.mode, f.owner)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.saved()
		}
		return errors.Join(errs...)
	}
	b := root.NewBatch("/etc", accountsJournal)
	var removes []pendingFile
	for _, f := range files {
		if f.remove {
			removes = append(removes, f)
			continue
		}
		b.Add(path.Base(f.path), f.data, f.mode, f.owner)
	}
	if err := b.Commit(); err != nil {
		return err
	}
	for _, f := range files {
		if !f.remove {
			f.saved()
		}
	}
	// Only pendingHomesFile is ever removed: after its homes, which
	// are on the disk, so it may go on its own.
	for _, f := range removes {
		if err := root.Remove(f.path); err != nil {
			return err
		}
		f.saved()
	}
	return nil
}

// pendingHomes is pendingHomesFile as read, and as it is to be saved.
type pendingHomes struct {
	names    []string
	original string
}

func readPendingHomes(root *rootfs.Root) (*pendingHomes, error) {
	data, err := root.ReadFile(pendingHomesFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read account database: %w", err)
	}
	h := &pendingHomes{original: string(data)}
	for _, name := range strings.Split(string(data), "\n") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(h.names, name) {
			h.names = append(h.names, name)
		}
	}
	return h, nil
}

func (h *pendingHomes) text() string {
	if len(h.names) == 0 {
		return ""
	}
	return strings.Join(h.names, "\n") + "\n"
}

// pending is the file to save, if it changed.
func (h *pendingHomes) pending() (pendingFile, bool) {
	text := h.text()
	if text == h.original {
		return pendingFile{}, false
	}
	return pendingFile{path: pendingHomesFile, data: []byte(text), mode: 0o600, owner: ownedBy(0, 0),
		remove: text == "", saved: func() { h.original = text }}, true
}

// PendHome notes that name's home is to be made: saved with the user, it
// tells a run after a power cut that the user is its own, its home
// perhaps half made.
func (db *DB) PendHome(name string) {
	if !slices.Contains(db.homes.names, name) {
		db.homes.names = append(db.homes.names, name)
	}
}

// HomePending reports whether name's home is still to be made.
func (db *DB) HomePending(name string) bool {
	return slices.Contains(db.homes.names, name)
}

// HomesMade forgets the homes of names, once made and on the disk; Save
// then removes or rewrites pendingHomesFile.
func (db *DB) HomesMade(names ...string) {
	db.homes.names = slices.DeleteFunc(db.homes.names, func(n string) bool { return slices.Contains(names, n) })
}
