package users

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

func manyUsers(n int, extra map[string]any) []any {
	users := make([]any, n)
	for i := range users {
		u := map[string]any{"name": fmt.Sprintf("u%d", i)}
		for k, v := range extra {
			u[k] = v
		}
		users[i] = u
	}
	return users
}

func manyGroups(n int) []any {
	groups := make([]any, n)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
	}
	return groups
}

// Past the limits on users and groups the module changes nothing and says
// which limit, and where it was passed.
func TestUsersGroupsLimits(t *testing.T) {
	type lim struct{ users, groups int }
	tests := []struct {
		name    string
		limits  lim
		cfg     apply.Config
		wantErr string // "": success
	}{
		{name: "users at the limit", limits: lim{3, maxGroups}, cfg: apply.Config{"users": manyUsers(3, nil)}},
		{
			name:    "users over the limit",
			limits:  lim{3, maxGroups},
			cfg:     apply.Config{"users": manyUsers(4, nil)},
			wantErr: "users: 4 users, more than the 3 one config may have (users: item 3 (u3) is the first past the limit): no user or group created",
		},
		{
			name:    "the real limit on users",
			limits:  lim{maxUsers, maxGroups},
			cfg:     apply.Config{"users": manyUsers(maxUsers+1, nil)},
			wantErr: "users: 1001 users, more than the 1000 one config may have (users: item 1000 (u1000) is the first past the limit)",
		},
		{name: "groups at the limit", limits: lim{maxUsers, 3}, cfg: apply.Config{"groups": manyGroups(3)}},
		{
			name:    "groups over the limit",
			limits:  lim{maxUsers, 3},
			cfg:     apply.Config{"groups": manyGroups(4)},
			wantErr: "groups: the config names 4 groups, more than the 3 it may (g3 is the first past the limit): no user or group created",
		},
		{
			name:    "groups named by users count",
			limits:  lim{maxUsers, 3},
			cfg:     apply.Config{"groups": manyGroups(2), "users": manyUsers(2, map[string]any{"groups": "g1, sudo, extra"})},
			wantErr: "groups: the config names 4 groups, more than the 3 it may (extra is the first past the limit)",
		},
		{
			name:    "the real limit on groups",
			limits:  lim{maxUsers, maxGroups},
			cfg:     apply.Config{"users": manyUsers(1, map[string]any{"groups": manyGroups(maxGroups + 1)})},
			wantErr: "groups: the config names 1001 groups, more than the 1000 it may (g1000 is the first past the limit)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := limits
			limits.users, limits.groups = tt.limits.users, tt.limits.groups
			defer func() { limits = saved }()
			dir := debianRoot(t)
			before := readFile(t, dir, "etc/passwd") + readFile(t, dir, "etc/group")
			env := applytest.NewEnvAt(t, dir, tt.cfg)
			err := runUsersGroups(context.Background(), env.Env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v\nwant one saying %q", err, tt.wantErr)
			}
			if after := readFile(t, dir, "etc/passwd") + readFile(t, dir, "etc/group"); after != before {
				t.Error("the account files changed")
			}
		})
	}
}
