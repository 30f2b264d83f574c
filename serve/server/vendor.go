package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/serve/inventory"
)

// The vendor layout is what appliance vendors' own management servers
// answered, and what seedinit's VendorHTTP datasource reads with its
// defaults plus network_config and vendor_data named:
//
//	datasource:
//	  VendorHTTP:
//	    base_url: http://HOST:PORT/vendor/latest/
//	    vendor_data: vendor_data
//	    network_config: network-config
//
// under PREFIX/latest/: meta_data.json (the meta-data as one JSON
// object), meta_data/KEY (one key each), user_data, vendor_data,
// network-config and, signed, seed-manifest and seed-manifest.sig. The
// instance is the one asking by its address.

// vendorMeta is meta_data.json: the instance's meta-data as JSON.
func vendorMeta(inst *inventory.Instance) ([]byte, error) {
	b, err := json.Marshal(inst.MetaData)
	if err != nil {
		return nil, fmt.Errorf("encode meta-data of %s as JSON: %w", inst.Name, err)
	}
	return b, nil
}

func (s *Server) serveVendor(w http.ResponseWriter, r *request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.refuse(w, r, http.StatusMethodNotAllowed, "only GET")
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, s.cfg.VendorPrefix)
	version, file, _ := strings.Cut(rest, "/")
	if version != "latest" {
		s.refuse(w, r, http.StatusNotFound, "not a vendor layout path: want "+s.cfg.VendorPrefix+"latest/FILE")
		return
	}
	inst, _, why := s.byAddress(r)
	if inst == nil {
		s.refuse(w, r, http.StatusNotFound, why)
		return
	}
	meta, err := vendorMeta(inst)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	parts := map[string][]byte{"meta-data": meta, "user-data": inst.UserData, "vendor-data": inst.VendorData, "network-config": inst.NetworkConfig}
	if isManifest, sig := isManifestFile(file); isManifest {
		s.serveManifest(w, r, inst, sig, parts)
		return
	}
	var body []byte
	switch file {
	case "meta_data.json":
		body = meta
	case "user_data":
		body = inst.UserData
	case "vendor_data":
		body = inst.VendorData
	case "network-config":
		body = inst.NetworkConfig
	default:
		key, ok := strings.CutPrefix(file, "meta_data/")
		if !ok {
			http.Error(w, "no such file", http.StatusNotFound)
			return
		}
		v, ok := inst.MetaData[key]
		if !ok {
			http.Error(w, "instance "+inst.Name+" has no meta-data key "+key, http.StatusNotFound)
			return
		}
		switch x := v.(type) {
		case string:
			body = []byte(x)
		default:
			if body, err = json.Marshal(x); err != nil {
				s.refuse(w, r, http.StatusInternalServerError, "encode meta-data key "+key+": "+err.Error())
				return
			}
		}
	}
	if body == nil {
		http.Error(w, "instance "+inst.Name+" has no "+file, http.StatusNotFound)
		return
	}
	s.serve(w, r, inst, file, "application/octet-stream", body)
}
