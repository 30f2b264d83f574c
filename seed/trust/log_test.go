package trust

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// Each part's verdict is one line at its level; a decision under off
// says nothing, since nothing was checked.
func TestLogOneLinePerVerdict(t *testing.T) {
	d := &Decision{Policy: "require", Manifest: "cidata", Problems: []string{"the manifest from http://x is not signed"}, Parts: []Finding{
		{Part: "user-data", Verdict: Trusted, Detail: "signed by SHA256:abc"},
		{Part: "vendor-data", Verdict: NotApplied, Detail: "not in the manifest"},
		{Part: "meta-data", Verdict: Unverified, Detail: "no manifest"},
	}}
	var buf testenv.Buffer
	Log(d, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	want := []string{
		`level=WARN msg="seed trust" policy=require problem="the manifest from http://x is not signed"`,
		`level=INFO msg="seed part trusted" part=user-data detail="signed by SHA256:abc" manifest=cidata`,
		`level=ERROR msg="seed part not applied" part=vendor-data policy=require why="not in the manifest"`,
		`level=WARN msg="seed part applied unverified" part=meta-data policy=require why="no manifest"`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var quiet testenv.Buffer
	Log(&Decision{Policy: Off.String(), Parts: d.Parts}, slog.New(slog.NewTextHandler(&quiet, nil)))
	Log(nil, slog.New(slog.NewTextHandler(&quiet, nil)))
	if quiet.String() != "" {
		t.Fatalf("off and nil logged %q", quiet.String())
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
