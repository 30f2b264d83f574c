package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

// gzB64 is n zero bytes, gzip'd and base64'd: a small item that decodes
// to a lot.
func gzB64(n int) string {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(make([]byte, n))
	w.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func plainItems(n, size int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"path": fmt.Sprintf("/srv/f%d", i), "content": strings.Repeat("x", size)}
	}
	return items
}

// The limits on items and content fail with an error that names the limit
// and the item, and write nothing past it.
func TestWriteFilesLimits(t *testing.T) {
	type lim struct {
		items       int
		item, total int64
	}
	real := lim{maxItems, maxContent, maxTotal}
	tests := []struct {
		name        string
		limits      lim
		items       []any
		wantErr     []string // each must be in the error; none: success
		wantWritten int      // files under /srv
	}{
		{
			name:        "items at the limit",
			limits:      lim{3, maxContent, maxTotal},
			items:       plainItems(3, 10),
			wantWritten: 3,
		},
		{
			name:    "items over the limit",
			limits:  lim{3, maxContent, maxTotal},
			items:   plainItems(4, 10),
			wantErr: []string{"write_files: 4 items, more than the 3 one config may have (item 3, /srv/f3 is the first past the limit): none written"},
		},
		{
			name:    "the real limit on items",
			limits:  real,
			items:   plainItems(maxItems+1, 1),
			wantErr: []string{"write_files: 1001 items, more than the 1000 one config may have (item 1000, /srv/f1000 is the first past the limit)"},
		},
		{
			name:   "an item over its limit",
			limits: lim{maxItems, 1000, maxTotal},
			items: append(plainItems(1, 1000), map[string]any{
				"path": "/srv/bomb", "encoding": "gz+b64", "content": gzB64(1001),
			}),
			wantErr:     []string{"write_files: item 1 (/srv/bomb): the content passes 1000 bytes once decoded, the most one item may write"},
			wantWritten: 1,
		},
		{
			name:   "the real limit on an item",
			limits: real,
			items: []any{map[string]any{
				"path": "/srv/bomb", "encoding": "gz+b64", "content": gzB64(maxContent + 1),
			}},
			wantErr: []string{"write_files: item 0 (/srv/bomb): the content passes 64 MiB once decoded, the most one item may write"},
		},
		{
			name:        "total at the limit",
			limits:      lim{maxItems, maxContent, 3000},
			items:       plainItems(3, 1000),
			wantWritten: 3,
		},
		{
			name:   "total over the limit",
			limits: lim{maxItems, maxContent, 3000},
			items:  plainItems(5, 1000),
			wantErr: []string{
				"write_files: item 3 (/srv/f3): the items' content passes 3000 bytes in all once decoded, the most one run of write_files writes",
				"write_files: the 1 item(s) after item 3 not written",
			},
			wantWritten: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := limits
			limits.items, limits.item, limits.total = tt.limits.items, tt.limits.item, tt.limits.total
			defer func() { limits = saved }()
			env := applytest.NewEnv(t, apply.Config{"write_files": tt.items})
			err := runWriteFiles(context.Background(), env.Env)
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v\ndoes not say %q", err, want)
				}
			}
			entries, _ := os.ReadDir(filepath.Join(env.Root.Dir(), "srv"))
			if len(entries) != tt.wantWritten {
				t.Errorf("%d files in /srv, want %d: %v", len(entries), tt.wantWritten, entries)
			}
		})
	}
}

// Content that does not decode fails its item when it is written, with
// the step that failed, and leaves nothing behind.
func TestWriteFilesBadContent(t *testing.T) {
	tests := []struct {
		name, encoding, content, wantErr string
	}{
		{"base64 padding", "b64", "YQ", "item 0 (/srv/x): decode base64 content: incorrect padding"},
		{"not gzip", "gz", "plain text, not gzip", "item 0 (/srv/x): decompress gzip content: gzip: invalid header"},
		{"gzip cut short", "gz+b64", gzB64(100000)[:100], "item 0 (/srv/x): decompress gzip content: unexpected EOF"},
		{"base64 before gzip", "gz+b64", "Y", "item 0 (/srv/x): decode base64 content: number of data characters (1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := applytest.NewEnv(t, apply.Config{"write_files": []any{
				map[string]any{"path": "/srv/x", "encoding": tt.encoding, "content": tt.content},
			}})
			err := runWriteFiles(context.Background(), env.Env)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			}
			if entries, _ := os.ReadDir(filepath.Join(env.Root.Dir(), "srv")); len(entries) != 0 {
				t.Errorf("a failed item left %v", entries)
			}
		})
	}
}
