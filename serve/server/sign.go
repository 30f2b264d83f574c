package server

import (
	"net/http"
	"slices"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
)

type manifestKey struct {
	inst   *inventory.Instance
	layout string
}

// signed is one manifest and its signature as served.
type signed struct {
	body, sig []byte
	err       error
}

// manifest is the signed manifest over parts (by role, as the layout
// serves them) for inst, bound to it: its system UUIDs, its MACs and its
// instance-id, so that another machine given this seed, or this seed
// served for another instance, is refused by a client that requires
// signatures. It is made once per inventory generation, so every request
// of one boot sees the same bytes.
func (s *Server) manifest(r *request, inst *inventory.Instance, parts map[string][]byte) *signed {
	key := manifestKey{inst, r.layout}
	g := r.gen
	g.mu.Lock()
	defer g.mu.Unlock()
	if m, ok := g.manifests[key]; ok {
		return m
	}
	m := &trust.Manifest{
		SignedAt:    g.loadedAt.UTC().Truncate(1e9),
		Parts:       map[string][32]byte{},
		SystemUUIDs: slices.Clone(inst.SystemUUIDs),
		MACs:        slices.Clone(inst.MACs),
	}
	if inst.InstanceID != "" {
		m.InstanceIDs = []string{inst.InstanceID}
	}
	for role, content := range parts {
		if content != nil {
			m.Parts[role] = trust.Digest(content)
		}
	}
	out := &signed{}
	out.body, out.sig, out.err = trust.SignManifest(s.cfg.SignKey, m)
	if out.err != nil {
		s.log.Error("manifest not signed", "instance", inst.Name, "layout", r.layout, "error", out.err.Error())
	}
	g.manifests[key] = out
	return out
}

// serveManifest answers file (seed-manifest or seed-manifest.sig, or a
// vendor layout's own name for it, sig telling which) for inst.
func (s *Server) serveManifest(w http.ResponseWriter, r *request, inst *inventory.Instance, sig bool, parts map[string][]byte) {
	if s.cfg.SignKey == nil {
		s.refuse(w, r, http.StatusNotFound, "no signing key: seeds are served unsigned")
		return
	}
	m := s.manifest(r, inst, parts)
	if m.err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "manifest not signed: "+m.err.Error())
		return
	}
	if sig {
		s.serve(w, r, inst, seed.ManifestSignatureFile, "text/plain", m.sig)
		return
	}
	s.serve(w, r, inst, seed.ManifestFile, "text/plain", m.body)
}

// isManifestFile says which of the manifest's two files name is.
func isManifestFile(name string) (isManifest, isSig bool) {
	switch name {
	case seed.ManifestFile:
		return true, false
	case seed.ManifestSignatureFile:
		return true, true
	}
	return false, false
}
