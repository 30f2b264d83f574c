package users

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

// BenchmarkUsersGroups creates n users on a Debian-like root, each with
// what a fleet's config gives them: a shared group, a sudo rule and a key.
// The cost per user must stay flat as n grows: the account files, the
// group's member list and the sudoers file are each written once, not
// once per user. Each iteration starts from a fresh root, made outside the
// timer; it writes into the test's temporary directory, so compare runs
// on the same machine only. The limit on users is lifted for 5,000, to
// show how the code grows past it.
func BenchmarkUsersGroups(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			saved := limits
			limits.users = max(n, maxUsers)
			defer func() { limits = saved }()
			users := make([]any, n)
			for i := range users {
				users[i] = map[string]any{
					"name":                fmt.Sprintf("u%d", i),
					"groups":              "users",
					"sudo":                "ALL=(ALL) NOPASSWD:ALL",
					"ssh_authorized_keys": []any{keyA},
				}
			}
			cfg := apply.Config{"users": users}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := debianRoot(b)
				writeTree(b, dir, map[string]string{"etc/subuid": "", "etc/subgid": ""})
				env := applytest.NewEnvAt(b, dir, cfg)
				env.Log = slog.New(slog.DiscardHandler)
				b.StartTimer()
				if err := runUsersGroups(context.Background(), env.Env); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/user")
		})
	}
}
