package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/serve/inventory"
)

// openStackVersions are the metadata versions offered, oldest first: the
// ones cloud-init and seedinit know, so that either picks the newest.
var openStackVersions = []string{
	"2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15",
	"2016-06-30", "2016-10-06", "2017-02-22", "2018-08-27",
}

// openStackMeta is meta_data.json as Nova writes it, from the instance's
// NoCloud meta-data: uuid is the instance-id, hostname the
// local-hostname, name the instance's name in the inventory.
func openStackMeta(inst *inventory.Instance) ([]byte, error) {
	md := inst.MetaData
	hostname := inst.Hostname
	if h, ok := md["local-hostname"].(string); ok && h != "" {
		hostname = h
	}
	meta := map[string]any{}
	// Nova's instance properties are where an OpenStack meta_data.json
	// carries what is not its own; seedinit reads its report URL there.
	if u, ok := md[seed.ReportURLKey].(string); ok && u != "" {
		meta[seed.ReportURLKey] = u
	}
	out := map[string]any{
		"uuid":         inst.InstanceID,
		"name":         inst.Name,
		"launch_index": 0,
		"meta":         meta,
	}
	if hostname != "" {
		out["hostname"] = hostname
	}
	if inst.HasIndex {
		out["launch_index"] = inst.Index
	}
	for _, k := range []string{"availability-zone", "availability_zone"} {
		if az, ok := md[k].(string); ok && az != "" {
			out["availability_zone"] = az
			break
		}
	}
	if keys := publicKeys(md); len(keys) > 0 {
		pk := map[string]any{}
		for i, k := range keys {
			pk[fmt.Sprintf("key-%d", i)] = k
		}
		out["public_keys"] = pk
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode meta_data.json of %s: %w", inst.Name, err)
	}
	return b, nil
}

// publicKeys are meta-data's public-keys (or public_keys) as a list: a
// string of lines, a list, or a mapping of names to keys, as cloud-init's
// normalize_pubkey_data reads them.
func publicKeys(md map[string]any) []string {
	var keys []string
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case string:
			for _, l := range strings.Split(x, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					keys = append(keys, l)
				}
			}
		case []any:
			for _, item := range x {
				add(item)
			}
		case map[string]any:
			names := make([]string, 0, len(x))
			for k := range x {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				add(x[k])
			}
		}
	}
	for _, k := range []string{"public-keys", "public_keys"} {
		add(md[k])
	}
	return keys
}

// openStackVendor is vendor_data.json: the vendor-data as a JSON string,
// which cloud-init and seedinit take as the cloud-config it holds; {}
// when there is none.
func openStackVendor(inst *inventory.Instance) []byte {
	if inst.VendorData == nil {
		return []byte("{}")
	}
	b, _ := json.Marshal(string(inst.VendorData))
	return b
}

// openStackNetwork is inst's network config as network_data.json, nil
// when it has none or it does not convert (said once per inventory
// load).
func (s *Server) openStackNetwork(r *request, inst *inventory.Instance) []byte {
	if inst.NetworkConfig == nil {
		return nil
	}
	n, err := parse.YAML(inst.NetworkConfig, parse.Options{})
	var b []byte
	if err == nil {
		b, err = render.NetworkDataJSON(n)
	}
	if err != nil {
		if _, told := r.gen.netWarned.LoadOrStore(inst, true); !told {
			s.log.Warn("no network_data.json for the OpenStack layout", "instance", inst.Name, "why", err.Error())
		}
		return nil
	}
	return b
}

// serveOpenStack answers the OpenStack metadata service's openstack/
// tree for the instance asking by its address.
func (s *Server) serveOpenStack(w http.ResponseWriter, r *request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.refuse(w, r, http.StatusMethodNotAllowed, "only GET")
		return
	}
	inst, _, why := s.byAddress(r)
	if inst == nil {
		s.refuse(w, r, http.StatusNotFound, why)
		return
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openstack"), "/")
	if rest == "" {
		s.serve(w, r, inst, "versions", "text/plain", []byte(strings.Join(append(slices.Clone(openStackVersions), "latest"), "\n")))
		return
	}
	version, file, _ := strings.Cut(rest, "/")
	if version != "latest" && !slices.Contains(openStackVersions, version) {
		s.refuse(w, r, http.StatusNotFound, "no OpenStack version "+quote(version))
		return
	}
	meta, err := openStackMeta(inst)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	netData := s.openStackNetwork(r, inst)
	parts := map[string][]byte{"meta-data": meta, "user-data": inst.UserData, "network-config": netData}
	if isManifest, sig := isManifestFile(file); isManifest {
		s.serveManifest(w, r, inst, sig, parts)
		return
	}
	switch file {
	case "":
		files := []string{"meta_data.json", "vendor_data.json", "vendor_data2.json"}
		if inst.UserData != nil {
			files = append(files, "user_data")
		}
		if netData != nil {
			files = append(files, "network_data.json")
		}
		s.serve(w, r, inst, "listing", "text/plain", []byte(strings.Join(files, "\n")))
	case "meta_data.json":
		s.serve(w, r, inst, file, "application/json", meta)
	case "user_data":
		if inst.UserData == nil {
			http.Error(w, "instance "+inst.Name+" has no user_data", http.StatusNotFound)
			return
		}
		s.serve(w, r, inst, file, "application/octet-stream", inst.UserData)
	case "vendor_data.json":
		s.serve(w, r, inst, file, "application/json", openStackVendor(inst))
	case "network_data.json":
		if netData == nil {
			http.Error(w, "instance "+inst.Name+" has no network_data.json", http.StatusNotFound)
			return
		}
		s.serve(w, r, inst, file, "application/json", netData)
	case "vendor_data2.json":
		s.serve(w, r, inst, file, "application/json", []byte("{}"))
	default:
		http.Error(w, "no "+file+" in this metadata service", http.StatusNotFound)
	}
}
