package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config up to MaxConfigSize is read and checked; a larger one is
// refused with an error that says so, whether its size is known first (a
// regular file) or only found by reading (a pipe).
func TestValidateFileSize(t *testing.T) {
	const head = "#cloud-config\nfinal_message: "
	doc := func(size int) []byte {
		return []byte(head + strings.Repeat("x", size-len(head)-1) + "\n")
	}
	tests := []struct {
		name    string
		size    int
		pipe    bool
		wantErr string
	}{
		{name: "at the limit", size: int(MaxConfigSize)},
		{name: "over the limit", size: int(MaxConfigSize) + 1, wantErr: fmt.Sprintf("the file is %d bytes: cloud-config over 16 MiB is not read", MaxConfigSize+1)},
		{name: "small, from a pipe", size: 100, pipe: true},
		{name: "over the limit, from a pipe", size: int(MaxConfigSize) + 1, pipe: true, wantErr: "more than 16777216 bytes: cloud-config over 16 MiB is not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "user-data")
			if tt.pipe {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				go func() {
					w.Write(doc(tt.size))
					w.Close()
				}()
				name = fmt.Sprintf("/proc/self/fd/%d", r.Fd())
			} else if err := os.WriteFile(name, doc(tt.size), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := ValidateFile(name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errTooLarge) {
					t.Fatalf("ValidateFile = %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Valid() {
				t.Errorf("the file is not valid: %+v", rep.Errors)
			}
		})
	}
}
