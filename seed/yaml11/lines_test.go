package yaml11

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name, doc string
		want      map[string]int
	}{
		{
			name: "cloud-init's example",
			doc:  "one: val1\ntwo:\n  subtwo: val2\nthree: [val3, val4]\n",
			want: map[string]int{"one": 1, "two": 2, "two.subtwo": 3, "three": 4, "three.0": 4, "three.1": 4},
		},
		{
			name: "list of maps",
			doc:  "#cloud-config\nusers:\n  - name: a\n    sudo: x\n  - name: b\n",
			want: map[string]int{"users": 2, "users.0": 3, "users.0.name": 3, "users.0.sudo": 4, "users.1": 5, "users.1.name": 5},
		},
		{
			name: "merge key and alias",
			doc:  "b: &b\n  shell: 5\nu:\n  <<: *b\n  name: x\nc: *b\n",
			want: map[string]int{"b": 1, "b.shell": 2, "u": 3, "u.shell": 2, "u.name": 5, "c": 6, "c.shell": 2},
		},
		{name: "empty", doc: "", want: map[string]int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Lines([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzPositions(f *testing.F) {
	f.Add([]byte("a:\n  - b: 1\n  - [c, d]\n"))
	f.Add([]byte("x: &x {y: *x}\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Positions(data)
	})
}
