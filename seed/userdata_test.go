package seed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/seedinit/seedinit/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/userdata")

// noFetch is a Fetch for tests that must not reach any network.
func noFetch(context.Context, string) ([]byte, error) {
	return nil, errors.New("fetching is disabled in this test")
}

func process(t *testing.T, raw []byte, opts Options) *Processed {
	t.Helper()
	if opts.Fetch == nil {
		opts.Fetch = noFetch
	}
	got, err := ProcessUserData(context.Background(), raw, opts)
	if err != nil {
		t.Fatalf("ProcessUserData: %v", err)
	}
	return got
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ignoreSource leaves Source out of comparisons where a test is about
// something else.
var ignoreSource = cmpopts.IgnoreFields(Part{}, "Source")

func TestProcessUserDataSinglePart(t *testing.T) {
	tests := []struct {
		name         string
		raw          string
		want         []Part
		wantWarnings int
	}{
		{
			name: "cloud-config",
			raw:  "#cloud-config\nhostname: h1\n",
			want: []Part{{Kind: KindCloudConfig, Filename: "part-001", ContentType: "text/cloud-config", Content: []byte("#cloud-config\nhostname: h1\n")}},
		},
		{
			name: "cloud-config after blank lines, any case",
			raw:  "\n  \t#Cloud-Config\na: 1\n",
			want: []Part{{Kind: KindCloudConfig, Filename: "part-001", ContentType: "text/cloud-config", Content: []byte("\n  \t#Cloud-Config\na: 1\n")}},
		},
		{
			name: "script",
			raw:  "#!/bin/sh\necho hi\n",
			want: []Part{{Kind: KindScript, Filename: "part-001", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\necho hi\n")}},
		},
		{
			name: "boothook",
			raw:  "#cloud-boothook\necho early\n",
			want: []Part{{Kind: KindBoothook, Filename: "part-001", ContentType: "text/cloud-boothook", Content: []byte("#cloud-boothook\necho early\n")}},
		},
		{
			name: "json patch",
			raw:  "#cloud-config-jsonp\n[]\n",
			want: []Part{{Kind: KindJSONPatch, Filename: "part-001", ContentType: "text/cloud-config-jsonp", Content: []byte("#cloud-config-jsonp\n[]\n")}},
		},
		{
			name:         "part handler is kept and warned about",
			raw:          "#part-handler\nx = 1\n",
			want:         []Part{{Kind: KindPartHandler, Filename: "part-001", ContentType: "text/part-handler", Content: []byte("#part-handler\nx = 1\n")}},
			wantWarnings: 1,
		},
		{
			name: "per-boot content type as the first word",
			raw:  "text/x-shellscript-per-boot\necho\n",
			want: []Part{{Kind: KindScript, Frequency: "always", Filename: "part-001", ContentType: "text/x-shellscript-per-boot", Content: []byte("text/x-shellscript-per-boot\necho\n")}},
		},
		{
			name:         "unknown text is ignored with a warning",
			raw:          "hello world\n",
			wantWarnings: 1,
		},
		{
			name: "empty",
			raw:  "",
		},
		{
			name:         "only whitespace is unknown text too",
			raw:          " \n\n",
			wantWarnings: 1,
		},
		{
			name:         "archive of nothing but a mapping",
			raw:          "#cloud-config-archive\na: 1\n",
			wantWarnings: 1,
		},
		{
			name:         "include with nothing to fetch",
			raw:          "#include\n\n# comment\n",
			wantWarnings: 0,
		},
		{
			name:         "include that cannot be fetched",
			raw:          "#include http://127.0.0.1:9/x\n#cloud-config\n",
			wantWarnings: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := process(t, []byte(tt.raw), Options{})
			if diff := cmp.Diff(tt.want, got.Parts, ignoreSource, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if len(got.Warnings) != tt.wantWarnings {
				t.Errorf("warnings = %q, want %d", got.Warnings, tt.wantWarnings)
			}
		})
	}
}

// goldenPart is a Part as the golden files show it.
type goldenPart struct {
	Kind        PartKind `json:"kind"`
	Filename    string   `json:"filename"`
	ContentType string   `json:"content_type"`
	Frequency   string   `json:"frequency,omitempty"`
	MergeHow    string   `json:"merge_how,omitempty"`
	Source      string   `json:"source"`
	Content     string   `json:"content"`
}

type golden struct {
	Parts    []goldenPart `json:"parts"`
	Warnings []string     `json:"warnings"`
}

func toGolden(p *Processed) golden {
	g := golden{Parts: []goldenPart{}, Warnings: p.Warnings}
	if g.Warnings == nil {
		g.Warnings = []string{}
	}
	for _, part := range p.Parts {
		g.Parts = append(g.Parts, goldenPart{
			Kind: part.Kind, Filename: part.Filename, ContentType: part.ContentType,
			Frequency: part.Frequency, MergeHow: part.MergeHow, Source: part.Source,
			Content: strings.ToValidUTF8(string(part.Content), "\uFFFD"),
		})
	}
	return g
}

// TestProcessUserDataGolden runs every testdata/userdata/*.userdata file
// (MIME in MIME, archives in MIME, gzip inside and outside, base64 and
// quoted-printable parts, message/rfc822, filenames and numbering) and
// compares with its .golden.json. TestMatchesCloudInit checks the same
// files against cloud-init itself.
func TestProcessUserDataGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/userdata/*.userdata")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".userdata")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := toGolden(process(t, raw, Options{}))
			goldenFile := strings.TrimSuffix(file, ".userdata") + ".golden.json"
			if *update {
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenFile, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(goldenFile)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			var want golden
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("parse %s: %v", goldenFile, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", goldenFile, diff)
			}
		})
	}
}

// TestMatchesCloudInit compares the parts of every testdata file with what
// cloud-init 22.4.2's UserDataProcessor and handler walk make of it:
// same order, filenames, content types, payloads and merge types.
func TestMatchesCloudInit(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Skipf(t, "cloud-init oracle unavailable: %s not found", python)
	}
	if err := exec.Command(python, "-c", "import cloudinit.user_data").Run(); err != nil {
		testenv.Skipf(t, "cloud-init oracle unavailable: %s cannot import cloudinit: %v", python, err)
	}
	files, err := filepath.Glob("testdata/userdata/*.userdata")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, append([]string{"testdata/userdata/oracle.py"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run oracle: %v\n%s", err, stderr.String())
	}
	var want map[string][][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("parse oracle output: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := [][]string{}
			for _, p := range process(t, raw, Options{}).Parts {
				got = append(got, []string{p.Filename, p.ContentType, base64.StdEncoding.EncodeToString(p.Content), p.MergeHow})
			}
			if diff := cmp.Diff(want[file], got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts differ from cloud-init's [filename, type, base64 content, merge type] (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestProcessUserDataSizeCap(t *testing.T) {
	// A gzip bomb: 256 MiB of zeros in about 256 KiB.
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	if _, err := io.CopyN(zw, zeroReader{}, 256<<20); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	mimeBomb := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n" +
		"Content-Type: application/x-gzip\nContent-Transfer-Encoding: base64\n\n" +
		base64.StdEncoding.EncodeToString(bomb.Bytes()) + "\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho still here\n--B--\n"

	tests := []struct {
		name    string
		raw     []byte
		maxSize int64
		wantErr string
		// wantParts and wantWarning apply when there is no error.
		wantParts   int
		wantWarning string
	}{
		{name: "raw input over the cap", raw: bytes.Repeat([]byte("#"), 2048), maxSize: 1024, wantErr: "exceed the 1024-byte cap"},
		{name: "gzip bomb at the top", raw: bomb.Bytes(), maxSize: 8 << 20, wantErr: "exceeds the 8388608-byte cap"},
		{name: "gzip bomb with the default cap", raw: bomb.Bytes(), wantErr: "exceeds the 16777216-byte cap"},
		{name: "gzip bomb in a MIME part", raw: []byte(mimeBomb), maxSize: 8 << 20, wantParts: 1, wantWarning: "exceeds the 8388608-byte cap"},
		{name: "corrupt gzip at the top", raw: append([]byte{0x1f, 0x8b, 8, 0}, bytes.Repeat([]byte{0xff}, 20)...), wantErr: "gunzip"},
		{name: "truncated gzip at the top", raw: gz(t, []byte("#!/bin/sh\n"))[:15], wantErr: "gunzip"},
		{name: "gzip with trailing zeros", raw: append(gz(t, []byte("#!/bin/sh\n")), 0, 0, 0), wantParts: 1},
		{name: "two gzip members", raw: append(gz(t, []byte("#!/bin/sh\n")), gz(t, []byte("echo 2\n"))...), wantParts: 1},
		{name: "MIME that is not UTF-8", raw: []byte("MIME-Version: 1.0\n\n\xff\xfe"), wantErr: "not valid UTF-8 at byte 19"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProcessUserData(context.Background(), tt.raw, Options{MaxSize: tt.maxSize, Fetch: noFetch})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ProcessUserData: %v", err)
			}
			if len(got.Parts) != tt.wantParts {
				t.Errorf("got %d parts, want %d: %+v", len(got.Parts), tt.wantParts, got.Parts)
			}
			if tt.wantWarning != "" && !strings.Contains(strings.Join(got.Warnings, "\n"), tt.wantWarning) {
				t.Errorf("warnings %q lack %q", got.Warnings, tt.wantWarning)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// includeServer serves user-data for #include tests on loopback and counts
// the requests per path.
type includeServer struct {
	*httptest.Server
	hits map[string]*atomic.Int32
}

func newIncludeServer(t *testing.T, routes map[string]http.HandlerFunc) *includeServer {
	t.Helper()
	s := &includeServer{hits: map[string]*atomic.Int32{}}
	mux := http.NewServeMux()
	for path, h := range routes {
		counter := &atomic.Int32{}
		s.hits[path] = counter
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			counter.Add(1)
			h(w, r)
		})
	}
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func serve(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }
}

func TestProcessUserDataInclude(t *testing.T) {
	var srv *includeServer
	srv = newIncludeServer(t, map[string]http.HandlerFunc{
		"/cc":     serve("#cloud-config\nhostname: included\n"),
		"/script": serve("#!/bin/sh\necho included\n"),
		"/mime": serve("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/x-shellscript\n" +
			"Content-Disposition: attachment; filename=\"from-mime.sh\"\n\n#!/bin/sh\n--B\n\n#cloud-config\na: 1\n--B--\n"),
		"/gzip": func(w http.ResponseWriter, r *http.Request) {
			w.Write(gz(t, []byte("#cloud-boothook\necho gz\n")))
		},
		"/nested": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "#include\n%s/script\n", srv.URL)
		},
		"/loop": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "#include %s/loop\n", srv.URL)
		},
		"/missing": http.NotFound,
		"/redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/redirect", http.StatusFound)
		},
		"/to-file": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		},
		"/once": serve("#!/bin/sh\necho once\n"),
	})
	tests := []struct {
		name string
		raw  string
		// want is [filename, content type, content] per part.
		want         [][3]string
		wantWarnings []string
	}{
		{
			name: "include line by line",
			raw:  "#include\n" + srv.URL + "/cc\n\n# a comment\n  " + srv.URL + "/script  \n",
			want: [][3]string{
				{"part-001", "text/cloud-config", "#cloud-config\nhostname: included\n"},
				{"part-002", "text/x-shellscript", "#!/bin/sh\necho included\n"},
			},
		},
		{
			name: "include on the first line",
			raw:  "#include " + srv.URL + "/cc",
			want: [][3]string{{"part-001", "text/cloud-config", "#cloud-config\nhostname: included\n"}},
		},
		{
			name: "include of a MIME multipart and of gzip",
			raw:  "#include\n" + srv.URL + "/mime\n" + srv.URL + "/gzip\n",
			want: [][3]string{
				{"from-mime.sh", "text/x-shellscript", "#!/bin/sh"},
				{"part-002", "text/cloud-config", "#cloud-config\na: 1"},
				{"part-003", "text/cloud-boothook", "#cloud-boothook\necho gz\n"},
			},
		},
		{
			name: "include of an include",
			raw:  "#include " + srv.URL + "/nested\n",
			want: [][3]string{{"part-001", "text/x-shellscript", "#!/bin/sh\necho included\n"}},
		},
		{
			name:         "a 404 is a warning and the rest goes on",
			raw:          "#include\n" + srv.URL + "/missing\n" + srv.URL + "/script\n",
			want:         [][3]string{{"part-001", "text/x-shellscript", "#!/bin/sh\necho included\n"}},
			wantWarnings: []string{"include " + srv.URL + "/missing: GET: HTTP status 404 Not Found; skipped"},
		},
		{
			name:         "an include loop stops at the depth limit",
			raw:          "#include " + srv.URL + "/loop\n",
			wantWarnings: []string{"more than 10 levels of #include"},
		},
		{
			name:         "too many redirects",
			raw:          "#include " + srv.URL + "/redirect\n",
			wantWarnings: []string{"stopped after 5 redirects"},
		},
		{
			name:         "redirect to a file URL",
			raw:          "#include " + srv.URL + "/to-file\n",
			wantWarnings: []string{`refusing a redirect to scheme "file"`},
		},
		{
			name:         "file URLs and paths are refused",
			raw:          "#include\nfile:///etc/passwd\n/etc/shadow\n",
			wantWarnings: []string{`unsupported URL scheme "file"`, `unsupported URL scheme ""`},
		},
		{
			name: "query strings are not shown",
			raw:  "#include " + srv.URL + "/missing?token=s3cret\n",
			wantWarnings: []string{
				"include " + srv.URL + "/missing?REDACTED: GET: HTTP status 404 Not Found; skipped",
			},
		},
		{
			name: "text/x-include-url part in MIME",
			raw: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/x-include-url\n\n" +
				srv.URL + "/cc\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\n--B--\n",
			want: [][3]string{
				{"part-001", "text/cloud-config", "#cloud-config\nhostname: included\n"},
				{"part-002", "text/x-shellscript", "#!/bin/sh"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProcessUserData(context.Background(), []byte(tt.raw), Options{})
			if err != nil {
				t.Fatalf("ProcessUserData: %v", err)
			}
			var parts [][3]string
			for _, p := range got.Parts {
				parts = append(parts, [3]string{p.Filename, p.ContentType, string(p.Content)})
			}
			if diff := cmp.Diff(tt.want, parts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if len(got.Warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings = %q, want %d like %q", got.Warnings, len(tt.wantWarnings), tt.wantWarnings)
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got.Warnings[i], w)
				}
				if strings.Contains(got.Warnings[i], "s3cret") {
					t.Errorf("warning %d shows the token: %q", i, got.Warnings[i])
				}
			}
		})
	}

	t.Run("include-once is fetched once and then read from the cache", func(t *testing.T) {
		cache := &MemoryIncludeCache{}
		raw := []byte("#include-once\n" + srv.URL + "/once\n")
		for run := 1; run <= 3; run++ {
			got, err := ProcessUserData(context.Background(), raw, Options{IncludeOnce: cache})
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if len(got.Parts) != 1 || string(got.Parts[0].Content) != "#!/bin/sh\necho once\n" {
				t.Fatalf("run %d: parts = %+v, warnings = %q", run, got.Parts, got.Warnings)
			}
		}
		if n := srv.hits["/once"].Load(); n != 1 {
			t.Errorf("/once fetched %d times, want 1", n)
		}
		if _, ok := cache.Get(srv.URL + "/once"); !ok {
			t.Error("the cache does not hold the content")
		}
	})

	// Under a trust policy that applies only what a signed manifest
	// covers, no URL is fetched, and a cached #include-once is not read.
	t.Run("NoIncludes refuses every include", func(t *testing.T) {
		cache := &MemoryIncludeCache{}
		cache.Put(srv.URL+"/once", []byte("#!/bin/sh\necho cached\n"))
		before := srv.hits["/script"].Load()
		raw := []byte("#include " + srv.URL + "/script\n#include-once " + srv.URL + "/once\n")
		got, err := ProcessUserData(context.Background(), raw, Options{IncludeOnce: cache, NoIncludes: "seed trust is require"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Parts) != 0 || srv.hits["/script"].Load() != before {
			t.Errorf("parts %+v, fetched %d times", got.Parts, srv.hits["/script"].Load()-before)
		}
		if len(got.Refused) != 2 || !strings.Contains(got.Refused[0], "not applied: seed trust is require") || len(got.Warnings) != 0 {
			t.Errorf("refused %q, warnings %q", got.Refused, got.Warnings)
		}
	})

	t.Run("#include after #include-once turns caching off", func(t *testing.T) {
		cache := &MemoryIncludeCache{}
		raw := []byte("#include-once " + srv.URL + "/cc\n#include " + srv.URL + "/script\n")
		if _, err := ProcessUserData(context.Background(), raw, Options{IncludeOnce: cache}); err != nil {
			t.Fatal(err)
		}
		if _, ok := cache.Get(srv.URL + "/cc"); !ok {
			t.Error("include-once URL not cached")
		}
		if _, ok := cache.Get(srv.URL + "/script"); ok {
			t.Error("plain include URL cached")
		}
	})

	t.Run("file cache uses cloud-init's urlcache names", func(t *testing.T) {
		files := map[string][]byte{}
		cache := FileIncludeCache{
			Dir: IncludeOnceDir,
			ReadFile: func(name string) ([]byte, error) {
				if b, ok := files[name]; ok {
					return b, nil
				}
				return nil, os.ErrNotExist
			},
			WriteFile: func(name string, data []byte) error { files[name] = data; return nil },
		}
		url := srv.URL + "/once"
		if _, err := ProcessUserData(context.Background(), []byte("#include-once "+url), Options{IncludeOnce: cache}); err != nil {
			t.Fatal(err)
		}
		name := IncludeOnceDir + "/" + IncludeOnceKey(url)
		if string(files[name]) != "#!/bin/sh\necho once\n" {
			t.Errorf("cache files = %q, want %s", files, name)
		}
	})
}

func TestIncludeOnceKey(t *testing.T) {
	// md5 of the URL, as cloud-init's util.hash_blob(url, "md5", 64).
	if got, want := IncludeOnceKey("http://example.com/ud"), "94e474960d7302f4868d0b82b9586044"; got != want {
		t.Errorf("IncludeOnceKey = %s, want %s", got, want)
	}
}

func TestIncludeSlowServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got, err := ProcessUserData(ctx, []byte("#include\n"+srv.URL+"/slow\n"+srv.URL+"/slow2\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Parts) != 0 || len(got.Warnings) != 2 {
		t.Fatalf("parts %+v, warnings %q; want none and 2", got.Parts, got.Warnings)
	}
	for _, w := range got.Warnings {
		if !strings.Contains(w, "context deadline exceeded") {
			t.Errorf("warning %q does not name the deadline", w)
		}
	}
}

func TestIncludeFetchOverCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.CopyN(w, zeroReader{}, 1<<20)
	}))
	defer srv.Close()
	got, err := ProcessUserData(context.Background(), []byte("#include "+srv.URL), Options{MaxSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "more than") {
		t.Errorf("warnings = %q, want one about the size", got.Warnings)
	}
}

func TestErrorOnFailure(t *testing.T) {
	raw := []byte("#include http://127.0.0.1:9/x\n")
	if _, err := ProcessUserData(context.Background(), raw, Options{Fetch: noFetch}); err != nil {
		t.Fatalf("default: %v, want a warning only", err)
	}
	_, err := ProcessUserData(context.Background(), raw, Options{Fetch: noFetch, ErrorOnFailure: true})
	if err == nil || !strings.Contains(err.Error(), "include http://127.0.0.1:9/x") {
		t.Fatalf("ErrorOnFailure: error = %v, want one naming the URL", err)
	}
}

func TestLaunchIndex(t *testing.T) {
	raw := []byte("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n" +
		"--B\nContent-Type: text/x-shellscript\nLaunch-Index: 0\n\n#!/bin/sh\necho zero\n" +
		"--B\nContent-Type: text/x-shellscript\nLaunch-Index: 1\n\n#!/bin/sh\necho one\n" +
		"--B\nContent-Type: text/cloud-config\n\n#cloud-config\nlaunch-index: 1\n" +
		"--B\nContent-Type: text/cloud-config\n\n#cloud-config\na: everyone\n" +
		"--B\nContent-Type: text/cloud-config-archive\n\n- {content: '#!/bin/sh', launch-index: 0}\n" +
		"--B--\n")
	names := func(p *Processed) []string {
		var out []string
		for _, part := range p.Parts {
			out = append(out, part.Filename)
		}
		return out
	}
	zero, one := 0, 1
	tests := []struct {
		name  string
		index *int
		want  []string
	}{
		{"no filter", nil, []string{"part-001", "part-002", "part-003", "part-004", "part-005"}},
		{"index 0", &zero, []string{"part-001", "part-004", "part-005"}},
		{"index 1", &one, []string{"part-002", "part-003", "part-004"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := process(t, raw, Options{LaunchIndex: tt.index})
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJinjaTemplate(t *testing.T) {
	vars := map[string]any{"v1": map[string]any{"local_hostname": "node-1"}}
	tests := []struct {
		name        string
		raw         string
		vars        map[string]any
		want        []Part
		wantWarning string
	}{
		{
			name: "renders to cloud-config",
			raw:  "## template: jinja\n#cloud-config\nhostname: {{ v1.local_hostname }}\n",
			vars: vars,
			want: []Part{{Kind: KindCloudConfig, Filename: "part-001", ContentType: "text/jinja2", Content: []byte("#cloud-config\nhostname: node-1\n")}},
		},
		{
			name: "renders to a script in a MIME part",
			raw:  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/jinja2\nContent-Disposition: attachment; filename=\"t.sh\"\n\n## template: jinja\n#!/bin/sh\necho {{ local_hostname }}\n--B--\n",
			vars: vars,
			want: []Part{{Kind: KindScript, Filename: "t.sh", ContentType: "text/jinja2", Content: []byte("#!/bin/sh\necho node-1")}},
		},
		{
			name:        "no instance data",
			raw:         "## template: jinja\n#cloud-config\n",
			wantWarning: "no instance data",
		},
		{
			name:        "render error names the part",
			raw:         "## template: jinja\n#cloud-config\n{% if %}\n",
			vars:        vars,
			wantWarning: `user-data part 1 (text/jinja2, "part-001")`,
		},
		{
			name:        "a boothook has no jinja sub-handler",
			raw:         "## template: jinja\n#cloud-boothook\necho\n",
			vars:        vars,
			wantWarning: "no handler for rendered content",
		},
		{
			name:        "missing variables are reported",
			raw:         "## template: jinja\n#cloud-config\na: {{ nope }}\n",
			vars:        vars,
			want:        []Part{{Kind: KindCloudConfig, Filename: "part-001", ContentType: "text/jinja2", Content: []byte("#cloud-config\na: CI_MISSING_JINJA_VAR/nope\n")}},
			wantWarning: "'nope'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := process(t, []byte(tt.raw), Options{TemplateVars: tt.vars})
			if diff := cmp.Diff(tt.want, got.Parts, ignoreSource, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts (-want +got):\n%s\nwarnings: %q", diff, got.Warnings)
			}
			if tt.wantWarning != "" && !strings.Contains(strings.Join(got.Warnings, "\n"), tt.wantWarning) {
				t.Errorf("warnings %q lack %q", got.Warnings, tt.wantWarning)
			}
		})
	}
}

func TestSourceAndName(t *testing.T) {
	raw := []byte("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\n#cloud-config\n--B\n" +
		"Content-Disposition: attachment; filename=setup.sh\n\n#!/bin/sh\n--B--\n")
	got := process(t, raw, Options{Name: "vendor-data"})
	want := []string{
		`vendor-data part 1 (text/cloud-config, "part-001")`,
		`vendor-data part 2 (text/x-shellscript, "setup.sh")`,
	}
	var sources []string
	for _, p := range got.Parts {
		sources = append(sources, p.Source)
	}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}

func TestDecodeBase64(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "I2Nsb3VkLWNvbmZpZwo=", want: "#cloud-config\n"},
		{in: "I2Nsb3Vk\nLWNvbmZp\r\nZwo=", want: "#cloud-config\n"},
		{in: "I2Nsb3VkLWNvbmZpZwo", wantErr: true},
		{in: "I2Nsb3VkLWNvbmZpZwo=garbage", want: "#cloud-config\n"},
		{in: "!!I2Nsb3VkLWNvbmZpZwo=", want: "#cloud-config\n"},
		{in: "QUJD", want: "ABC"},
		{in: "Q", wantErr: true},
		{in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := DecodeBase64([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTypeFromStartsWith(t *testing.T) {
	tests := map[string]string{
		"#cloud-config\n":             "text/cloud-config",
		"#cloud-config-archive\n":     "text/cloud-config-archive",
		"#cloud-config-jsonp\n":       "text/cloud-config-jsonp",
		"#include-once\n":             "text/x-include-once-url",
		"#INCLUDE http://x\n":         "text/x-include-url",
		"#!/bin/sh":                   "text/x-shellscript",
		"\u00a0\u2003#!/bin/sh":       "text/x-shellscript",
		"\x1c#!/bin/sh":               "text/x-shellscript",
		"#cloud-boothoo\u212a":        "text/cloud-boothook",
		"## template: jinja\n":        "text/jinja2",
		"##template: jinja\n":         "",
		"#part-handler":               "text/part-handler",
		"text/x-shellscript-per-once": "text/x-shellscript-per-once",
		"# cloud-config":              "",
		"\xff#!":                      "",
		"":                            "",
	}
	for in, want := range tests {
		if got := TypeFromStartsWith([]byte(in)); got != want {
			t.Errorf("TypeFromStartsWith(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanFilename(t *testing.T) {
	tests := map[string]string{
		"setup.sh":         "setup.sh",
		"../../etc/passwd": ".._.._etc_passwd",
		"a b\tc.sh":        "abc.sh",
		"café (1).sh":      "caf(1).sh",
	}
	for in, want := range tests {
		if got := CleanFilename(in); got != want {
			t.Errorf("CleanFilename(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"http://example.com/a":                 "http://example.com/a",
		"https://user:pw@example.com/a?sig=xx": "https://REDACTED@example.com/a?REDACTED",
	}
	for in, want := range tests {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
