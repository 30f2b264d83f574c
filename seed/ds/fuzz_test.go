package ds

import (
	"bytes"
	"testing"
)

func FuzzParseOpenStackMetadata(f *testing.F) {
	f.Add([]byte(`{"uuid": "x", "random_seed": "YWJj", "public_keys": {"k": "ssh-rsa A"}}`))
	f.Add([]byte(`{"uuid": 1.5e300, "meta": {"dsmode": "pass"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"random_seed": 7}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		md, err := ParseOpenStackMetadata(raw)
		if err == nil {
			openStackSeed(&openStackData{meta: md}, "ConfigDrive")
		}
	})
}

func FuzzConvertVendorData(f *testing.F) {
	f.Add([]byte(`{"cloud-init": "#cloud-config\n"}`))
	f.Add([]byte(`["a", "b"]`))
	f.Add([]byte(`{"cloud-init": {"x": 1}}`))
	f.Add([]byte(`true`))
	f.Fuzz(func(t *testing.T, raw []byte) { ConvertVendorData(raw) })
}

func FuzzParseVendorMetadata(f *testing.F) {
	f.Add([]byte(`{"uuid": "a"}`))
	f.Add([]byte("instance-id: x\nlocal-hostname: y\n"))
	f.Add([]byte("- 1\n"))
	f.Fuzz(func(t *testing.T, raw []byte) { ParseVendorMetadata(raw) })
}

func FuzzNoCloudMeta(f *testing.F) {
	f.Add([]byte("instance-id: iid\nnetwork-interfaces: |\n  auto eth0\n"))
	f.Add([]byte("public-keys: {a: [x, y]}\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		md, err := parseNoCloudMeta(raw, "fuzz")
		if err == nil {
			md["instance-id"] = "x"
			noCloudSeed(&noCloudData{meta: md})
		}
	})
}

func FuzzCmdline(f *testing.F) {
	f.Add("ro ds=nocloud;s=http://10.0.0.1/;h=a;i=b ci.ds=OpenStack,None")
	f.Add("ds=nocloud-net;;x seedinit.ds=")
	f.Fuzz(func(t *testing.T, line string) {
		CmdlineDatasources(line)
		parseNoCloudArgs(line)
	})
}

// FuzzOpenImage feeds arbitrary images (seeded with real ISO and FAT
// headers) to the disk reader: it must fail cleanly, never hang or panic.
func FuzzOpenImage(f *testing.F) {
	iso := make([]byte, 20*2048)
	copy(iso[16*2048:], append([]byte{1}, "CD001"...))
	f.Add(iso)
	fat := make([]byte, 4096)
	copy(fat[11:], []byte{0, 2, 1, 1, 0, 2, 16, 0, 8, 0, 0xf8, 1, 0})
	fat[510], fat[511] = 0x55, 0xAA
	f.Add(fat)
	f.Fuzz(func(t *testing.T, img []byte) {
		fsys, err := OpenImage(bytes.NewReader(img), int64(len(img)))
		if err != nil {
			return
		}
		var walk func(dir string, depth int)
		walk = func(dir string, depth int) {
			names, _ := fsys.ReadDir(dir)
			for _, n := range names {
				p := dir + "/" + n
				if fsys.IsDir(p) && depth < 4 {
					walk(p, depth+1)
				} else {
					fsys.ReadFile(p)
				}
			}
		}
		walk("", 0)
	})
}

// FuzzOEMStrings feeds arbitrary SMBIOS structures to the OEM strings
// reader and what it reads to the NoCloud and credential readers.
func FuzzOEMStrings(f *testing.F) {
	f.Add([]byte("\x0b\x05\x00\x0b\x02io.systemd.credential.binary:cloud-init.user-data=I2Nsb3VkLWNvbmZpZwo=\x00cloud-init:ds=nocloud;i=x\x00\x00"))
	f.Add([]byte("\x0b\x05\x00\x00\x01io.systemd.credential:cloud-init.meta-data=instance-id: a\x00\x00"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		strs, _ := parseOEMStrings(raw)
		oemNoCloudArgs(strs)
		creds, _ := oemCredentials(strs)
		tree := newCredentialTree(creds)
		(&noCloudData{meta: map[string]any{}}).readTree(tree, "fuzz")
	})
}
