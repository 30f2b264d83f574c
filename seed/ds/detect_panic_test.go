package ds

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/seed"
)

// scriptedDS is a datasource whose probe and fetch the test writes.
type scriptedDS struct {
	name    string
	network bool
	probe   func() (Evidence, error)
	fetch   func(ctx context.Context) (*seed.Seed, error)
}

func (d scriptedDS) Name() string       { return d.name }
func (d scriptedDS) NeedsNetwork() bool { return d.network }
func (d scriptedDS) Probe(context.Context, *Env) (Evidence, error) {
	return d.probe()
}
func (d scriptedDS) Fetch(ctx context.Context, _ *Env) (*seed.Seed, error) {
	return d.fetch(ctx)
}

func found() (Evidence, error) { return Evidence{Verdict: Found, Reason: "scripted"}, nil }

func goodSeed(id string) func(context.Context) (*seed.Seed, error) {
	return func(ctx context.Context) (*seed.Seed, error) {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &seed.Seed{InstanceID: id}, nil
	}
}

// registerForTest adds datasources to the registry for one test only:
// the others list every registered source.
func registerForTest(t *testing.T, ds ...Datasource) {
	for _, d := range ds {
		Register(d)
	}
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		for _, d := range ds {
			delete(registry, strings.ToLower(d.Name()))
		}
	})
}

func registerPanickers(t *testing.T) {
	registerForTest(t,
		scriptedDS{name: "TestPanicInFetch", network: true, probe: found,
			fetch: func(context.Context) (*seed.Seed, error) { panic("fetch blew up") }},
		scriptedDS{name: "TestPanicInProbe", network: true, probe: func() (Evidence, error) { panic("probe blew up") },
			fetch: goodSeed("never")},
		scriptedDS{name: "TestPanicLocal", probe: found,
			fetch: func(context.Context) (*seed.Seed, error) { panic("local fetch blew up") }},
		scriptedDS{name: "TestAnswers", network: true, probe: found, fetch: goodSeed("i-answers")},
		scriptedDS{name: "TestAnswersLocally", probe: found, fetch: goodSeed("i-local")},
	)
}

// A datasource that panics, in the network race's goroutines or on the
// search's own, costs only itself: the process lives (a panic on another
// goroutine would otherwise kill PID 1), the search picks the next source
// at once rather than waiting out the budget, and the attempt says why.
func TestDetectSurvivesPanickingDatasources(t *testing.T) {
	registerPanickers(t)
	var mu sync.Mutex
	var reported []string
	safego.SetReporter(func(e *safego.PanicError) { mu.Lock(); reported = append(reported, e.Name); mu.Unlock() })
	t.Cleanup(func() { safego.SetReporter(func(*safego.PanicError) {}) })
	cases := []struct {
		list      []string
		want      string
		panicker  string
		reportsAs string
	}{
		{[]string{"TestPanicInFetch", "TestAnswers"}, "i-answers", "TestPanicInFetch", "datasource TestPanicInFetch"},
		{[]string{"TestPanicInProbe", "TestAnswers"}, "i-answers", "TestPanicInProbe", "probe TestPanicInProbe"},
		{[]string{"TestPanicLocal", "TestAnswersLocally"}, "i-local", "TestPanicLocal", "fetch TestPanicLocal"},
	}
	for _, tc := range cases {
		t.Run(tc.panicker, func(t *testing.T) {
			mu.Lock()
			reported = nil
			mu.Unlock()
			env := newTestEnv(t, nil, MapDMI{}, "")
			env.Fetcher = loopbackFetcher(t, FetchOptions{})
			env.Config = Config{DatasourceList: tc.list}
			start := time.Now()
			res, err := Detect(context.Background(), env, 10*time.Second)
			if err != nil || res.Seed == nil || res.Seed.InstanceID != tc.want {
				t.Fatalf("Detect = %+v, %v; want the seed %s", res, err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the search waited %s: the panicking source was never heard of", d)
			}
			for _, a := range res.Attempts {
				if a.Datasource == tc.panicker && !strings.Contains(a.Detail+a.ProbeError, "panicked") {
					t.Errorf("%s's attempt = %+v, want it to say it panicked", a.Datasource, a)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reported) != 1 || reported[0] != tc.reportsAs {
				t.Errorf("reported panics %q, want [%s]", reported, tc.reportsAs)
			}
		})
	}
}
