// Package jinja renders the subset of Jinja2 that cloud-init users write in
// "## template: jinja" user-data.
package jinja

import "errors"

// Render renders a template (without its "## template: jinja" header line)
// against vars (instance-data: v1, ds, merged_cfg ...).
func Render(src []byte, vars map[string]any) ([]byte, error) {
	return nil, errors.New("jinja templates are not supported yet")
}
