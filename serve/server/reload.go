package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

// fingerprint sums the names, sizes and mtimes of dir's inventory files
// (the ones inventory.Load reads): a change to any of them, a file added
// or removed, changes it. Reading mtimes rather than contents keeps a
// poll of a thousand files cheap.
func fingerprint(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// ReloadIfChanged reloads the inventory when its files changed since it
// was loaded.
func (s *Server) ReloadIfChanged() {
	if s.cfg.Dir == "" {
		return
	}
	fp, err := fingerprint(s.cfg.Dir)
	if err != nil {
		s.log.Warn("inventory not reread", "dir", s.cfg.Dir, "error", err.Error())
		return
	}
	s.reloadMu.Lock()
	same := fp == s.fingerprint
	s.reloadMu.Unlock()
	if !same {
		s.Reload()
	}
}

// Reload reads the inventory again (SIGHUP, or its files changed). An
// inventory with problems is refused and the one being served kept: an
// operator's half-finished edit must not take the fleet's seeds away.
func (s *Server) Reload() error {
	if s.cfg.Dir == "" {
		return errors.New("reload: no inventory folder")
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	fp, _ := fingerprint(s.cfg.Dir)
	inv, err := inventory.Load(s.cfg.Dir)
	// The fingerprint is taken before the load: an edit during the load
	// changes it again and is read on the next poll.
	s.fingerprint = fp
	if err == nil && s.cfg.ReportURL != "" {
		// Before the generation is served: its manifests cover it.
		err = inv.AddReportURL(s.cfg.ReportURL)
	}
	if err != nil {
		var problems inventory.Problems
		if errors.As(err, &problems) {
			for _, p := range problems {
				s.log.Error("inventory problem", "problem", p.String())
			}
			err = fmt.Errorf("reload %s: %d problems", s.cfg.Dir, len(problems))
		}
		s.log.Error("inventory refused, still serving the previous one", "dir", s.cfg.Dir, "error", err.Error())
		return err
	}
	s.gen.Store(&generation{inv: inv, loadedAt: s.cfg.Now(), manifests: map[manifestKey]*signed{}})
	s.log.Info("inventory reloaded", "dir", s.cfg.Dir, "instances", len(inv.Instances), "groups", len(inv.Groups))
	return nil
}

// Use serves inv from now on, made at at: the inventory of a database
// that replicas share, checked by whoever loaded it (inventory.LoadFS).
// A server of a folder rereads its folder instead. Each replica given the
// same inventory and time signs the same manifests (Ed25519 is
// deterministic), so one boot's requests may reach any of them.
func (s *Server) Use(inv *inventory.Inventory, at time.Time) {
	if s.cfg.ReportURL != "" {
		// Checked at New: the same base cannot fail here.
		if err := inv.AddReportURL(s.cfg.ReportURL); err != nil {
			s.log.Warn("inventory: no report URL added", "error", err.Error())
		}
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.gen.Store(&generation{inv: inv, loadedAt: at, manifests: map[manifestKey]*signed{}})
	s.log.Info("inventory replaced", "from", inv.Dir, "instances", len(inv.Instances), "groups", len(inv.Groups), "made", at.UTC().Format(time.RFC3339))
}
