package scripts

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/scripts/citemplate"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// defaultFinalMessage says what cloud-init's does, in seedinit's words,
// with the same variables.
const defaultFinalMessage = "seedinit v. ${version} finished at ${timestamp}. Datasource ${datasource}.  Up ${uptime} seconds"

// Clocks, replaced by tests.
var (
	now    = time.Now
	uptime = readUptime
)

// readUptime is the running kernel's uptime in seconds, as /proc/uptime
// spells it; "??" when it cannot be read, as cloud-init shows it.
func readUptime() string {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return "??"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "??"
	}
	return f[0]
}

// runFinalMessage shows final_message (or the default) on the console and
// in the log, and writes the instance's boot-finished.
func runFinalMessage(ctx context.Context, env *apply.Env) error {
	msg, _, err := env.Config.String("final_message")
	if err != nil {
		env.Warn("final_message: %v: showing the default message", err)
		msg = ""
	}
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = defaultFinalMessage
	}
	up := uptime()
	ts := now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700")
	vars := map[string]any{}
	for k, v := range map[string]string{"uptime": up, "timestamp": ts, "version": apply.Version, "datasource": datasourceName(env)} {
		vars[k] = v
		vars[strings.ToUpper(k)] = v
	}
	rendered, err := citemplate.Render(msg, vars)
	if err != nil {
		env.Warn("final_message: %v", err)
	} else {
		fmt.Fprintf(env.Console, "%s\n", rendered)
		env.Log.Info(rendered)
	}
	finished := fmt.Sprintf("%s - %s - v. %s\n", up, ts, apply.Version)
	if err := env.Root.WriteFile(env.State.InstanceDir("boot-finished"), []byte(finished), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("final_message: write boot-finished: %w", err)
	}
	if env.Seed != nil && env.Seed.Datasource == "None" {
		env.Warn("used the fallback datasource (None)")
	}
	return nil
}

// datasourceName stands for cloud-init's str(datasource): the class name
// with where the data came from.
func datasourceName(env *apply.Env) string {
	if env.Seed == nil || env.Seed.Datasource == "" {
		return "DataSourceNone"
	}
	name := "DataSource" + env.Seed.Datasource
	if env.Seed.Subplatform != "" {
		name += " [" + env.Seed.Subplatform + "]"
	}
	return name
}
