package users

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed/yaml11"
)

var normalizeCases = []struct{ name, config string }{
	{"default and another", debianCloudCfg + "users: [default, bob]\n"},
	{"strings lists and maps", "users:\n  - {name: bob, groups: [a]}\n  - bob\n  - 'x,y'\n  - [p, q]\n  - {name: bob, shell: /bin/zsh, groups: [b]}\n"},
	{"comma string", debianCloudCfg + "users: 'b,a,default'\n"},
	{"mapping", "users:\n  alice: true\n  bob: {gecos: B}\n  carol: false\n"},
	{"old user string", debianCloudCfg + "user: joe\n"},
	{"old user mapping", debianCloudCfg + "user: {name: joe, sudo: null}\nusers: [bob]\n"},
	{"default merged with its real name", debianCloudCfg + "users:\n  - default\n  - {name: debian, groups: [extra, sudo], shell: /bin/zsh, gecos: Other}\n"},
	{"default entry overrides", debianCloudCfg + "users:\n  - {name: default, gecos: Mine, lock_passwd: false}\n"},
	{"nameless without a default user", "users:\n  - {gecos: G}\n  - ok\n"},
	{"dashed keys", "users:\n  - {name: a, lock-passwd: false, ssh-authorized-keys: [k]}\n"},
	{"groups list", "groups:\n  - {g1: [b, a]}\n  - g2\n  - {g1: c}\n"},
	{"groups string", "groups: 'x,y'\n"},
	{"groups mapping", "groups:\n  g: [m, a]\n  h: n\n"},
}

// TestNormalizeMatchesCloudInit runs cloud-init's
// ug_util.normalize_users_groups over the same configs and compares the
// users (order, merged config, default flag) and groups.
func TestNormalizeMatchesCloudInit(t *testing.T) {
	python := pythonWith(t, "cloudinit.distros.ug_util")
	script := `
import json, sys
from cloudinit.distros import ug_util
class Distro:
    def __init__(self, cfg):
        self.cfg = cfg
    def get_default_user(self):
        return ((self.cfg.get("system_info") or {}).get("default_user"))
cfg = json.loads(sys.argv[1])
users, groups = ug_util.normalize_users_groups(cfg, Distro(cfg))
json.dump({"users": [[k, v] for k, v in users.items()], "groups": [[k, v] for k, v in groups.items()]}, sys.stdout)
`
	for _, tc := range normalizeCases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := yaml11.Load([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			input, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(python, "-W", "ignore", "-c", script, string(input)).Output()
			if err != nil {
				t.Fatalf("cloud-init: %v", err)
			}
			var want any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			users, groups, _ := normalizeUsersGroups(loadConfig(t, tc.config), func(string, ...any) {})
			type result struct {
				Users  [][2]any `json:"users"`
				Groups [][2]any `json:"groups"`
			}
			r := result{Users: [][2]any{}, Groups: [][2]any{}}
			for _, u := range users {
				c := map[string]any{}
				for k, v := range u.Config {
					c[k] = v
				}
				c["default"] = u.Default
				r.Users = append(r.Users, [2]any{u.Name, c})
			}
			for _, g := range groups {
				members := []string{}
				members = append(members, g.Members...)
				r.Groups = append(r.Groups, [2]any{g.Name, members})
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("normalized users/groups differ from cloud-init's (-cloud-init +ours):\n%s", diff)
			}
		})
	}
}

func TestNormalizeNamelessEntryIsAnError(t *testing.T) {
	_, _, errs := normalizeUsersGroups(loadConfig(t, "users:\n  - ok\n  - {gecos: G}\n"), func(string, ...any) {})
	if len(errs) != 1 || errs[0].Error() != "users: item 1: no name, and no default user (system_info.default_user) to apply it to" {
		t.Errorf("errors = %v", errs)
	}
}
