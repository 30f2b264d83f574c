package trust

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

func TestManifestRoundTrip(t *testing.T) {
	m := &Manifest{
		SignedAt:    time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC),
		Parts:       map[string][sha256.Size]byte{"user-data": Digest([]byte("u")), "meta-data": Digest([]byte("m"))},
		SystemUUIDs: []string{"4c4c4544-0042-3510-8052-b3c04f4d4e32"},
		MACs:        []string{"52:54:00:12:34:56", "52:54:00:12:34:57"},
		InstanceIDs: []string{"iid-waf 0001"},
		NotBefore:   time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:    time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC),
		Files:       map[string][sha256.Size]byte{"/etc/fortinet/license.lic": Digest([]byte("l")), "/etc/a b": Digest(nil)},
		Bootstrap:   map[string]BootstrapFile{"config/init-cfg.txt": {Digest: Digest([]byte("l")), Mode: 0o640, UID: 0, GID: 993}, "license/auth codes": {Digest: Digest(nil), Mode: 0o600}},
	}
	text := string(m.Marshal())
	want := "seedinit-seed-manifest 1\n" +
		"signed-at 2026-11-28T07:00:00Z\n" +
		"part meta-data sha256:62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a\n" +
		"part user-data sha256:0bfe935e70c321c7ca3afc75ce0d0ca2f98b5422e008bb31c00c6d7f1f1c0ad6\n" +
		"file /etc/a b sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
		"file /etc/fortinet/license.lic sha256:acac86c0e609ca906f632b0e2dacccb2b77d22b0621f20ebece1a4835b93f6f0\n" +
		"bootstrap config/init-cfg.txt 0640 0 993 sha256:acac86c0e609ca906f632b0e2dacccb2b77d22b0621f20ebece1a4835b93f6f0\n" +
		"bootstrap license/auth codes 0600 0 0 sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
		"system-uuid 4c4c4544-0042-3510-8052-b3c04f4d4e32\n" +
		"mac 52:54:00:12:34:56\nmac 52:54:00:12:34:57\n" +
		"instance-id iid-waf 0001\n" +
		"not-before 2026-11-01T00:00:00Z\nnot-after 2026-12-28T00:00:00Z\n"
	if text != want {
		t.Fatalf("Marshal:\n%s\nwant:\n%s", text, want)
	}
	got, err := ParseManifest([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Marshal()) != text {
		t.Errorf("parsed back:\n%s", got.Marshal())
	}
	// A seed of injected files alone is a seed.
	if _, err := ParseManifest([]byte("seedinit-seed-manifest 1\nsigned-at 2026-11-28T07:00:00Z\nfile /etc/x sha256:" + strings.Repeat("ab", 32) + "\n")); err != nil {
		t.Errorf("a manifest of one file: %v", err)
	}
	// Upper-case input is what dmidecode prints: taken as Linux shows it.
	up, err := ParseManifest([]byte(strings.Replace(text, "4c4c4544-0042-3510-8052-b3c04f4d4e32", "4C4C4544-0042-3510-8052-B3C04F4D4E32", 1)))
	if err != nil || up.SystemUUIDs[0] != m.SystemUUIDs[0] {
		t.Errorf("upper-case system-uuid: %v %v", up, err)
	}
}

func TestParseManifestRefuses(t *testing.T) {
	const head = "seedinit-seed-manifest 1\nsigned-at 2026-11-28T07:00:00Z\n"
	part := "part user-data sha256:" + strings.Repeat("ab", 32) + "\n"
	for _, tc := range []struct{ name, text, want string }{
		{"another format", "seedinit-seed-manifest 2\n", "line 1"},
		{"empty", "", "no newline"},
		{"no newline at the end", strings.TrimSuffix(head+part, "\n"), "no newline"},
		{"CRLF", strings.ReplaceAll(head+part, "\n", "\r\n"), "line 1"},
		{"unknown field", head + part + "max-boots 3\n", `line 4: unknown field "max-boots"`},
		{"no part", head, "lists no part"},
		{"no signed-at", "seedinit-seed-manifest 1\n" + part, "no signed-at"},
		{"signed-at twice", head + "signed-at 2026-11-28T07:00:00Z\n" + part, "line 3: signed-at given twice"},
		{"part twice", head + part + part, "line 4: part user-data given twice"},
		{"unknown part", head + "part scripts sha256:" + strings.Repeat("ab", 32) + "\n", `part "scripts"`},
		{"short digest", head + "part user-data sha256:abcd\n", "64 lower-case hex"},
		{"upper-case digest", head + "part user-data sha256:" + strings.Repeat("AB", 32) + "\n", "64 lower-case hex"},
		{"other hash", head + "part user-data sha1:" + strings.Repeat("ab", 20) + "\n", "sha256:"},
		{"blank line", head + "\n" + part, "line 3"},
		{"trailing space", head + strings.TrimSuffix(part, "\n") + " \n", "line 3"},
		{"bad time", head + part + "not-after tomorrow\n", "line 4: not-after"},
		{"window backwards", head + part + "not-before 2027-01-01T00:00:00Z\nnot-after 2026-01-01T00:00:00Z\n", "before not-before"},
		{"bad uuid", head + part + "system-uuid 1234\n", "system-uuid"},
		{"bad mac", head + part + "mac 52:54:00\n", "mac"},
		{"control character", head + part + "instance-id a\x00b\n", "line 4"},
		{"file relative", head + part + "file etc/x sha256:" + strings.Repeat("ab", 32) + "\n", "line 4: file \"etc/x\": want an absolute, clean path"},
		{"file not clean", head + part + "file /etc/../x sha256:" + strings.Repeat("ab", 32) + "\n", "want an absolute, clean path"},
		{"file the root", head + part + "file / sha256:" + strings.Repeat("ab", 32) + "\n", "want an absolute, clean path"},
		{"file twice", head + part + "file /x sha256:" + strings.Repeat("ab", 32) + "\nfile /x sha256:" + strings.Repeat("cd", 32) + "\n", "line 5: file /x given twice"},
		{"file without digest", head + part + "file /x\n", "line 4: file"},
		{"bootstrap absolute", head + part + "bootstrap /etc/x 0644 0 0 sha256:" + strings.Repeat("ab", 32) + "\n", "want a relative, clean path"},
		{"bootstrap climbing", head + part + "bootstrap ../x 0644 0 0 sha256:" + strings.Repeat("ab", 32) + "\n", "want a relative, clean path"},
		{"bootstrap setuid", head + part + "bootstrap x 4755 0 0 sha256:" + strings.Repeat("ab", 32) + "\n", "at most 0777"},
		{"bootstrap short mode", head + part + "bootstrap x 644 0 0 sha256:" + strings.Repeat("ab", 32) + "\n", "four octal digits"},
		{"bootstrap owner", head + part + "bootstrap x 0644 root 0 sha256:" + strings.Repeat("ab", 32) + "\n", `owner "root"`},
		{"bootstrap owner signed", head + part + "bootstrap x 0644 -1 0 sha256:" + strings.Repeat("ab", 32) + "\n", `owner "-1"`},
		{"bootstrap short", head + part + "bootstrap x sha256:" + strings.Repeat("ab", 32) + "\n", "want a path, a mode"},
		{"bootstrap twice", head + part + "bootstrap x 0644 0 0 sha256:" + strings.Repeat("ab", 32) + "\nbootstrap x 0600 0 0 sha256:" + strings.Repeat("ab", 32) + "\n", "line 5: bootstrap x given twice"},
		{"too big", head + strings.Repeat(part, maxManifest/len(part)+1), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseManifest: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	m := &Manifest{SignedAt: time.Unix(1_800_000_000, 0), Parts: map[string][sha256.Size]byte{"user-data": Digest(nil)},
		MACs: []string{"52:54:00:12:34:56"}, InstanceIDs: []string{"i-1"}, NotAfter: time.Unix(1_900_000_000, 0)}
	f.Add(m.Marshal())
	f.Add([]byte("seedinit-seed-manifest 1\nsigned-at 2026-11-28T07:00:00+01:00\npart meta-data sha256:" + strings.Repeat("0", 64) + "\n"))
	f.Add([]byte("seedinit-seed-manifest 1\n"))
	f.Add([]byte("seedinit-seed-manifest 1\nsigned-at 2026-11-28T07:00:00Z\nfile /etc/a b/c sha256:" + strings.Repeat("0", 64) + "\n"))
	f.Add([]byte("seedinit-seed-manifest 1\nsigned-at 2026-11-28T07:00:00Z\nbootstrap config/a b 0644 0 993 sha256:" + strings.Repeat("0", 64) + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		// What parses writes out in a form that parses to the same.
		out := m.Marshal()
		again, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("Marshal of a parsed manifest does not parse: %v\n%s", err, out)
		}
		if string(again.Marshal()) != string(out) {
			t.Fatalf("not stable:\n%s\n%s", out, again.Marshal())
		}
	})
}
