package server

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// BenchmarkLayouts is one request of each kind through the handler (no
// network): what the server costs an instance before the wire. The
// remote address is injected, as a proxy would set it.
func BenchmarkLayouts(b *testing.B) {
	srv, err := New(Config{Dir: writeFleet(b, fleet), SignKey: nil,
		RemoteAddr: func(*http.Request) (netip.Addr, bool) { return netip.MustParseAddr(addr1), true }})
	if err != nil {
		b.Fatal(err)
	}
	srv.cfg.IMDSv1 = true
	for _, path := range []string{
		"/nocloud/" + uuid1 + "/meta-data",
		"/nocloud/" + uuid1 + "/user-data",
		"/openstack/latest/meta_data.json",
		"/openstack/latest/network_data.json",
		"/latest/meta-data/public-keys/0/openssh-key",
		"/vendor/latest/meta_data.json",
	} {
		b.Run(path, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			for b.Loop() {
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, w.Code, w.Body)
				}
			}
		})
	}
}
