package stages

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
)

var (
	prestartMu     sync.Mutex
	prestartEvents []string
)

func prestartEvent(format string, args ...any) {
	prestartMu.Lock()
	defer prestartMu.Unlock()
	prestartEvents = append(prestartEvents, fmt.Sprintf(format, args...))
}

func init() {
	apply.Register(apply.Module{Name: "test_first", Run: func(ctx context.Context, env *apply.Env) error {
		prestartEvent("test_first ran")
		return nil
	}})
	apply.Register(apply.Module{Name: "test_prestarted",
		Prestart: func(ctx context.Context, env *apply.Env) any {
			prestartEvent("test_prestarted prestarted with key %v", env.Config["test_value"])
			return env.Config["test_value"]
		},
		Run: func(ctx context.Context, env *apply.Env) error {
			prestartEvent("test_prestarted ran with %v", env.Prestarted)
			return nil
		}})
	apply.Register(apply.Module{Name: "test_prestart_panics",
		Prestart: func(ctx context.Context, env *apply.Env) any {
			panic("prestart broke, on purpose")
		},
		Run: func(ctx context.Context, env *apply.Env) error {
			prestartEvent("test_prestart_panics ran with %v", env.Prestarted)
			return nil
		}})
}

// A module's Prestart runs once the config is merged, before the first
// module of the run, even for a module of a later stage; what it returns
// reaches the module's Run; a module that will not run is not started; a
// Prestart that panics costs only the head start.
func TestPrestartBeforeTheModulesBefore(t *testing.T) {
	const userData = `#cloud-config
cloud_init_modules: [test_first, test_prestart_panics]
cloud_config_modules: [test_prestarted]
cloud_final_modules: []
test_value: 42
`
	dir := t.TempDir()
	prestartEvents = nil
	runOnce(t, dir, "i-1", userData)
	want := []string{
		"test_prestarted prestarted with key 42",
		"test_first ran",
		"test_prestart_panics ran with <nil>",
		"test_prestarted ran with 42",
	}
	if d := cmp.Diff(want, prestartEvents); d != "" {
		t.Errorf("first run (-want +got):\n%s", d)
	}

	prestartEvents = nil
	rep := runOnce(t, dir, "i-1", userData)
	if d := cmp.Diff([]string(nil), prestartEvents); d != "" {
		t.Errorf("same instance again: nothing to start or run (-want +got):\n%s", d)
	}
	if got := statuses(rep)["test_prestarted"]; got != StatusAlreadyRan {
		t.Errorf("test_prestarted %s on the second run", got)
	}
}
