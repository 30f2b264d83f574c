// Package scripts implements the cloud-init modules that run the user's
// commands and scripts: consume_data (scripts and boothooks from user-data
// and vendor-data), bootcmd, runcmd, scripts_vendor, scripts_per_once,
// scripts_per_boot, scripts_per_instance, scripts_user, and final_message.
//
// Every command runs inside the target through env.Sys.Run; its output is
// appended to the target's /var/log/seedinit-output.log under a header
// naming it.
package scripts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// OutputLog is where commands' output goes, in the target, as cloud-init's
// /var/log/cloud-init-output.log.
const OutputLog = "/var/log/seedinit-output.log"

func init() {
	apply.Register(apply.Module{Name: "consume_data", Frequency: apply.PerBoot, Keys: []string{"allow_userdata", "vendor_data"}, Run: runConsumeData})
	apply.Register(apply.Module{Name: "bootcmd", Frequency: apply.PerBoot, Keys: []string{"bootcmd"}, Run: runBootcmd})
	apply.Register(apply.Module{Name: "runcmd", Frequency: apply.PerInstance, Keys: []string{"runcmd"}, Run: runRuncmd})
	apply.Register(apply.Module{Name: "scripts_vendor", Frequency: apply.PerInstance, Keys: []string{"vendor_data"}, Run: runScriptsVendor})
	apply.Register(apply.Module{Name: "scripts_per_once", Frequency: apply.PerOnce, Run: runScriptsPerOnce})
	apply.Register(apply.Module{Name: "scripts_per_boot", Frequency: apply.PerBoot, Run: runScriptsPerBoot})
	apply.Register(apply.Module{Name: "scripts_per_instance", Frequency: apply.PerInstance, Run: runScriptsPerInstance})
	apply.Register(apply.Module{Name: "scripts_user", Frequency: apply.PerInstance, Run: runScriptsUser})
	apply.Register(apply.Module{Name: "final_message", Frequency: apply.PerBoot, Keys: []string{"final_message"}, Run: runFinalMessage})
}

// exitCoder is satisfied by *exec.ExitError and by fakes that simulate one.
type exitCoder interface{ ExitCode() int }

// run runs cmd in the target and appends its output to OutputLog. label
// names it in the log header ("runcmd", "scripts_user") and the command
// itself is its argv: never the content of a script, which may hold
// secrets.
func run(ctx context.Context, env *apply.Env, label string, cmd apply.Command) error {
	var out bytes.Buffer
	cmd.Output = &out
	err := env.Sys.Run(ctx, cmd)
	if errors.Is(err, apply.ErrSkipped) {
		return err
	}
	env.NoteUnrepeatable()
	result := "ok"
	if err != nil {
		result = err.Error()
		var ec exitCoder
		if errors.As(err, &ec) {
			result = fmt.Sprintf("exit status %d", ec.ExitCode())
		}
	}
	var entry bytes.Buffer
	fmt.Fprintf(&entry, "==> %s: %s (%s) <==\n", label, strings.Join(cmd.Argv, " "), result)
	entry.Write(out.Bytes())
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		entry.WriteByte('\n')
	}
	if logErr := env.Root.AppendFile(OutputLog, entry.Bytes(), 0o640, rootfs.KeepOwner); logErr != nil {
		env.Warn("%s: keep the output of %s: %v", label, cmd.Argv[0], logErr)
	}
	return err
}

// skipped turns the System's "cannot run this in the target" into the
// module's skip, keeping each reason.
func skipped(errs ...error) error {
	reasons := make([]string, len(errs))
	for i, err := range errs {
		reasons[i] = skipReason(err)
	}
	return apply.Skip("%s", strings.Join(reasons, "; "))
}

// skipReason is a skip's message without the sentinel's own text, which
// adds nothing to the reason.
func skipReason(err error) string {
	return strings.Replace(err.Error(), apply.ErrSkipped.Error()+": ", "", 1)
}

func instanceEnv(env *apply.Env) []string {
	if env.State != nil && env.State.InstanceID != "" {
		return []string{"INSTANCE_ID=" + env.State.InstanceID}
	}
	return nil
}
