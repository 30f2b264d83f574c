package merge

import (
	"context"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

// FuzzDecodeUserData runs user-data through decoding and merging as a
// boot does. Whatever the input, the merged config stays within the
// limits (the YAML of all parts, plus what JSON patches may add) and
// nothing panics; the rest is refused with errors.
func FuzzDecodeUserData(f *testing.F) {
	for _, shape := range []string{"map-keys", "list-items"} {
		f.Add(hostileUserData(shape, 300))
	}
	f.Add(hostileUserData("jinja-doubling", 40))
	var parts strings.Builder
	parts.WriteString("Content-Type: multipart/mixed; boundary=B\nMIME-Version: 1.0\n\n")
	for _, p := range manyParts(100) {
		parts.WriteString("--B\nContent-Type: text/cloud-config\n\n")
		parts.Write(p.Content)
	}
	parts.WriteString("--B--\n")
	f.Add([]byte(parts.String()))
	f.Add([]byte("#cloud-config\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=B\nMIME-Version: 1.0\n\n--B\nContent-Type: text/cloud-config\n\na: [1]\n--B\nContent-Type: text/cloud-config-jsonp\n\n[" +
		strings.Repeat(`{"op":"copy","from":"/a","path":"/a/-"},`, 30) + `{"op":"test","path":"/a/0","value":1}]` + "\n--B--\n"))
	vars := map[string]any{"v1": map[string]any{"local_hostname": "h"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		proc, err := seed.ProcessUserData(context.Background(), raw, seed.Options{
			MaxSize: 1 << 20, TemplateVars: vars, Fetch: func(context.Context, string) ([]byte, error) { return nil, context.Canceled },
		})
		if err != nil {
			return
		}
		cfg, _ := MergeParts(proc.Parts)
		if n := sizeWithin(cfg, 1<<22); n > 2*maxJSONValues+1 {
			t.Errorf("merged config of %d values, over the limits", n)
		}
	})
}
