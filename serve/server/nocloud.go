package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/seedinit/seedinit/serve/inventory"
)

// noCloudParts are NoCloud's parts as a seedfrom base serves them: the
// names are the files' and the manifest's roles both.
func noCloudParts(inst *inventory.Instance) map[string][]byte {
	return map[string][]byte{
		"meta-data":      inventory.MarshalYAML(inst.MetaData),
		"user-data":      userData(inst),
		"vendor-data":    inst.VendorData,
		"network-config": inst.NetworkConfig,
	}
}

// userData is what an instance without user-data gets: cloud-init's
// NoCloud needs the file, and an empty one is nothing to do.
func userData(inst *inventory.Instance) []byte {
	if inst.UserData == nil {
		return []byte{}
	}
	return inst.UserData
}

// serveNoCloud answers /nocloud/SELECTOR/FILE, the seedfrom base
// http://HOST/nocloud/SELECTOR/ (SELECTOR a system UUID, MAC, serial,
// instance-id or instance name: cloud-init fills
// __dmi.system-uuid__ in), and /nocloud/FILE for the instance asking by
// its address.
func (s *Server) serveNoCloud(w http.ResponseWriter, r *request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.refuse(w, r, http.StatusMethodNotAllowed, "only GET")
		return
	}
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/nocloud/")
	var inst *inventory.Instance
	var selector, file string
	switch segs := strings.Split(rest, "/"); len(segs) {
	case 1:
		file = segs[0]
		var why string
		if inst, _, why = s.byAddress(r); inst == nil {
			s.refuse(w, r, http.StatusNotFound, why)
			return
		}
	case 2:
		sel, err := url.PathUnescape(segs[0])
		if err != nil || sel == "" {
			s.refuse(w, r, http.StatusBadRequest, "malformed selector")
			return
		}
		selector, file = sel, segs[1]
		var ok bool
		if inst, _, ok = r.gen.inv.Lookup(selector); !ok {
			s.refuse(w, r, http.StatusNotFound, "no instance has selector "+quote(selector))
			return
		}
		r.instance = inst.Name
	default:
		s.refuse(w, r, http.StatusNotFound, "not a NoCloud path: want /nocloud/[SELECTOR/]meta-data")
		return
	}
	parts := noCloudParts(inst)
	if isManifest, sig := isManifestFile(file); isManifest {
		s.serveManifest(w, r, inst, sig, parts)
		return
	}
	body, known := parts[file]
	switch {
	case !known:
		s.refuse(w, r, http.StatusNotFound, "no NoCloud file "+quote(file))
	case body == nil:
		// Not a refusal: the instance has no such part, and NoCloud
		// takes a 404 as that.
		http.Error(w, "instance "+inst.Name+" has no "+file, http.StatusNotFound)
	default:
		s.serve(w, r, inst, file, "text/plain; charset=utf-8", body)
	}
}

// quote quotes what a client sent, short, for a message.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < ' ' || r == '"' || r == 0x7f {
			return '?'
		}
		return r
	}, s), "?") + `"`
}
