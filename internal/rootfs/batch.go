package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// A Batch replaces several files of one directory as one change, such as
// the four account files, which name each other: a user's group, its
// shadow entry. Each file is atomic on its own; the batch adds a redo
// journal so that a power cut between two of its renames is completed by
// the next RecoverBatch rather than leaving a user without its group:
//
//  1. every new file is written to a temporary file of its own naming
//     (".NAME.seedinit-batch-" and 12 hex digits, which the stale-file
//     sweep leaves alone), given its mode, owner and labels, and flushed;
//  2. the journal, which lists each temporary file and the name it
//     replaces, is written and flushed, and so is the directory: from
//     then on the batch is decided;
//  3. the temporary files are renamed over their files one by one, and
//     the directory is flushed;
//  4. the journal is removed.
//
// A cut before step 2 leaves the old files and temporary files that no
// journal names, which RecoverBatch removes; a cut after it leaves a
// journal whose remaining renames RecoverBatch makes. Either way every
// file of the batch is old, or every file is new.
type Batch struct {
	r       *Root
	dir     string
	journal string
	files   []batchFile
}

type batchFile struct {
	base  string
	data  []byte
	mode  fs.FileMode
	owner Owner
}

// NewBatch starts a batch of files in dir (a target path) whose journal
// is dir's file named journal.
func (r *Root) NewBatch(dir, journal string) *Batch {
	return &Batch{r: r, dir: dir, journal: journal}
}

// Add puts the file base (a name in the batch's directory) with data,
// mode and owner in the batch.
func (b *Batch) Add(base string, data []byte, mode fs.FileMode, owner Owner) {
	b.files = append(b.files, batchFile{base: base, data: data, mode: mode, owner: owner})
}

// Len is the number of files in the batch.
func (b *Batch) Len() int { return len(b.files) }

// batchMark starts the journal's first line.
const batchMark = "seedinit batch v1"

// batchTempPrefix is what the temporary files of base in a batch start
// with, before 12 hex digits.
func batchTempPrefix(base string) string {
	return strings.TrimSuffix(tempPrefix(base), "-") + "-batch-"
}

// Commit writes the batch's files as one change (see Batch). A journal
// left by an earlier batch must have been recovered first.
func (b *Batch) Commit() error {
	r := b.r
	if len(b.files) == 0 {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("write %s together: %w", b.names(), err) }
	for _, f := range b.files {
		if !plainName(f.base) {
			return fail(fmt.Errorf("%q is not a name in %s", f.base, b.dir))
		}
	}
	rel, err := r.Resolve(b.dir)
	if err != nil {
		return fail(err)
	}
	if err := r.MkdirAll(rel, 0o755, Owner{UID: 0, GID: 0}.orKeep(r)); err != nil {
		return fail(err)
	}
	dir, err := r.root.OpenRoot(rel)
	if err != nil {
		return fail(unwrapPath(err))
	}
	defer dir.Close()
	if _, err := dir.Lstat(b.journal); err == nil {
		return fail(fmt.Errorf("%s holds the journal of an unfinished batch", path.Join(b.dir, b.journal)))
	}
	r.sweep(dir, rel)

	// 1. The new files, flushed, under the batch's temporary names.
	var temps []string
	tidy := func() {
		for _, t := range temps {
			if r.step() == nil {
				dir.Remove(t)
			}
		}
	}
	var journal strings.Builder
	journal.WriteString(batchMark + "\n")
	var entries []journalEntry
	for _, f := range b.files {
		tmp, labelled, err := r.stage(dir, f)
		if tmp != "" {
			temps = append(temps, tmp)
		}
		if err != nil {
			tidy()
			return fail(fmt.Errorf("%s: %w", f.base, err))
		}
		fmt.Fprintf(&journal, "%s %s\n", tmp, f.base)
		entries = append(entries, journalEntry{temp: tmp, base: f.base, fresh: !labelled})
	}
	// 2. The journal: from here on, the batch is done whatever happens.
	if _, err := r.writeFile(path.Join(b.dir, b.journal), 0o600, Owner{UID: 0, GID: 0}.orKeep(r), writeOpts{}, func(f *os.File) error {
		_, err := f.WriteString(journal.String())
		return err
	}); err != nil {
		tidy()
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	// 3 and 4.
	if err := r.finishBatch(dir, rel, b.dir, b.journal, entries); err != nil {
		return fail(err)
	}
	return nil
}

func (b *Batch) names() string {
	names := make([]string, len(b.files))
	for i, f := range b.files {
		names[i] = path.Join(b.dir, f.base)
	}
	return strings.Join(names, ", ")
}

// stage writes f to a new temporary file of the batch in dir, with its
// mode, owner and the labels of the file it will replace, flushed. It
// returns the temporary file's name once it exists, even with an error,
// and whether labels were carried over.
func (r *Root) stage(dir *os.Root, f batchFile) (tmp string, labelled bool, err error) {
	if err := r.step(); err != nil {
		return "", false, err
	}
	var file *os.File
	for range 10 {
		tmp = path.Base(r.tempName(f.base))
		tmp = batchTempPrefix(f.base) + tmp[len(tempPrefix(f.base)):]
		var err error
		file, err = dir.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, f.mode.Perm()&0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", false, unwrapPath(err)
		}
		break
	}
	if file == nil {
		return "", false, errors.New("could not create a temporary file")
	}
	defer file.Close()
	if _, err := file.Write(f.data); err != nil {
		return tmp, false, err
	}
	// Owner before mode: chown clears setuid and setgid.
	if f.owner.UID >= 0 || f.owner.GID >= 0 {
		if err := file.Chown(f.owner.UID, f.owner.GID); err != nil {
			return tmp, false, fmt.Errorf("set owner %d:%d: %w", f.owner.UID, f.owner.GID, unwrapPath(err))
		}
	}
	if err := file.Chmod(f.mode); err != nil {
		return tmp, false, fmt.Errorf("set mode: %w", unwrapPath(err))
	}
	labelled = labelFile(dir, f.base, file)
	if err := file.Sync(); err != nil {
		return tmp, labelled, fmt.Errorf("flush to disk: %w", unwrapPath(err))
	}
	return tmp, labelled, nil
}

// journalEntry is one rename a batch's journal asks for; fresh is set
// when the file carries no labels of the one it replaces (unknown after
// a cut: then set).
type journalEntry struct {
	temp, base string
	fresh      bool
}

// parseJournal reads a journal; nil when it is not one of a batch's.
func parseJournal(text string) []journalEntry {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 2 || lines[0] != batchMark {
		return nil
	}
	var out []journalEntry
	for _, l := range lines[1:] {
		temp, base, ok := strings.Cut(l, " ")
		suffix, isOurs := strings.CutPrefix(temp, batchTempPrefix(base))
		if !ok || !plainName(base) || !isOurs || !isTempSuffix(suffix) {
			return nil
		}
		out = append(out, journalEntry{temp: temp, base: base, fresh: true})
	}
	return out
}

// plainName reports whether s names a file in a directory, no more.
func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00\n ")
}

// finishBatch makes a decided batch's renames that are still to be made,
// flushes the directory and removes the journal.
func (r *Root) finishBatch(dir *os.Root, rel, dirName, journal string, entries []journalEntry) error {
	for _, e := range entries {
		fi, err := dir.Lstat(e.temp)
		if errors.Is(err, fs.ErrNotExist) {
			continue // renamed before the cut
		}
		if err != nil {
			return unwrapPath(err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a file", path.Join(dirName, e.temp))
		}
		if err := r.step(); err != nil {
			return err
		}
		if err := dir.Rename(e.temp, e.base); err != nil {
			return unwrapPath(err)
		}
		r.dirtied(fi, rel)
		r.record("write", path.Join(dirName, e.base), path.Join(rel, e.base), e.fresh)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if err := r.step(); err != nil {
		return err
	}
	if err := dir.Remove(journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return unwrapPath(err)
	}
	r.record("remove", path.Join(dirName, journal), "", false)
	return nil
}

// RecoverBatch finishes what a batch of dir with that journal left when
// the power was cut: with a journal there, the renames it lists that were
// not made are made and the journal goes; without one, the batch's
// temporary files go. It reports whether a batch was finished. Run it
// before reading the batch's files, holding whatever lock their writers
// take.
func (r *Root) RecoverBatch(dir, journal string) (bool, error) {
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("finish the interrupted batch of %s: %w", path.Join(dir, journal), err)
	}
	rel, err := r.Resolve(dir)
	if err != nil {
		return fail(err)
	}
	d, err := r.root.OpenRoot(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return fail(unwrapPath(err))
	}
	defer d.Close()
	finished := false
	text, err := d.ReadFile(journal)
	switch {
	case err == nil:
		entries := parseJournal(string(text))
		if entries == nil {
			return fail(fmt.Errorf("%s is not a journal of seedinit's", path.Join(dir, journal)))
		}
		if err := r.finishBatch(d, rel, dir, journal, entries); err != nil {
			return fail(err)
		}
		finished = true
	case !errors.Is(err, fs.ErrNotExist):
		return fail(unwrapPath(err))
	}
	// What a batch cut before its journal was decided staged, and the
	// journal's own temporary files, whichever boot made them: the
	// caller holds the batch's lock.
	r.removeStaleTemps(d, journal)
	f, err := d.Open(".")
	if err != nil {
		return fail(unwrapPath(err))
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		i := strings.LastIndex(n, ".seedinit-batch-")
		if !strings.HasPrefix(n, ".") || i <= 0 || !isTempSuffix(n[i+len(".seedinit-batch-"):]) {
			continue
		}
		if fi, err := d.Lstat(n); err != nil || fi.IsDir() {
			continue
		}
		if err := r.step(); err != nil {
			return fail(err)
		}
		if err := d.Remove(n); err == nil {
			r.record("remove", path.Join(dir, n), "", false)
		}
	}
	return finished, nil
}

// syncDir flushes dir itself: the names in it, renamed or made, are on
// the disk when it returns.
func syncDir(dir *os.Root) error {
	d, err := dir.Open(".")
	if err != nil {
		return unwrapPath(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("flush %s: %w", dir.Name(), err)
	}
	return nil
}
