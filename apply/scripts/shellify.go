package scripts

import (
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

// Shellify turns bootcmd/runcmd's list into a shell script the way
// cloud-init's util.shellify does: a string is a line of shell as it is, a
// list is one command whose words are single-quoted, a null is skipped.
// Anything else makes the whole list an error: running some of the
// commands and not others would be worse than running none.
func Shellify(cmds []any) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i, c := range cmds {
		switch v := c.(type) {
		case nil:
		case string:
			b.WriteString(v + "\n")
		case []any:
			words := make([]string, len(v))
			for j, w := range v {
				words[j] = shellQuote(pyfmt.Str(w))
			}
			b.WriteString(strings.Join(words, " ") + "\n")
		default:
			return "", fmt.Errorf("item %d: want a string or a list, got %s", i, apply.TypeName(c))
		}
	}
	return b.String(), nil
}

// shellQuote wraps s in single quotes, closing and reopening them around
// each quote inside.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
