package inventory

import (
	"fmt"
	"testing"
)

// BenchmarkLoad1000 loads a lab of 1,000 instances of one group, what
// `seedinit serve check` and the server's start do.
func BenchmarkLoad1000(b *testing.B) {
	files := map[string]string{"groups/waf.yaml": wafGroup}
	for i := 1; i <= 1000; i++ {
		files[fmt.Sprintf("instances/waf-%04d.yaml", i)] = fmt.Sprintf("instance: waf-%04d\ngroups: [waf]\nselectors:\n  mac: 52:54:00:00:%02x:%02x\n  address: 10.99.%d.%d\n", i, i>>8, i&0xff, i>>8, i&0xff)
	}
	dir := writeInventory(b, files)
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
