package packages

import (
	"context"
	"fmt"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/jinja"
	"github.com/seedinit/seedinit/seed/yaml11"
)

const (
	apkRepositoriesFile = "/etc/apk/repositories"
	defaultAlpineMirror = "https://alpine.global.ssl.fastly.net/alpine"
)

// apkRepositoriesTemplate lays out /etc/apk/repositories as cloud-init's
// template does (main, community, testing, a local repo); the comments
// are ours.
const apkRepositoriesTemplate = `#
# Written by seedinit from the cloud-config's apk_repos
#
# on the first boot of this instance.
#

{{ alpine_baseurl }}/{{ alpine_version }}/main
{% if community_enabled -%}
{{ alpine_baseurl }}/{{ alpine_version }}/community
{% endif -%}
{% if testing_enabled -%}
{% if alpine_version != 'edge' %}
#
# Testing: mixing it into a release other than edge may break things.
#
{% endif %}
{{ alpine_baseurl }}/edge/testing
{% endif %}
{% if local_repo != '' %}

#
# Local repository
#
{{ local_repo }}/{{ alpine_version }}
{% endif %}

`

func runAPKConfigure(ctx context.Context, env *apply.Env) error {
	if !yaml11.Truthy(env.Config["apk_repos"]) {
		return apply.Skip("no apk_repos in the config")
	}
	section, _, err := env.Config.Map("apk_repos")
	if err != nil {
		return fmt.Errorf("read %w", err)
	}
	preserve, err := section.Bool("preserve_repositories", false)
	if err != nil {
		return fmt.Errorf("read apk_repos: %w", err)
	}
	if preserve {
		return apply.Skip("apk_repos.preserve_repositories is true")
	}
	if !yaml11.Truthy(section["alpine_repo"]) {
		return apply.Skip("no apk_repos.alpine_repo in the config")
	}
	repo, _, err := section.Map("alpine_repo")
	if err != nil {
		return fmt.Errorf("read apk_repos: %w", err)
	}
	if !yaml11.Truthy(repo["version"]) {
		return apply.Skip("apk_repos.alpine_repo.version is not set")
	}
	text, err := RenderAPKRepositories(section, repo)
	if err != nil {
		return err
	}
	if _, err := env.Root.WriteFileIfChanged(apkRepositoriesFile, text, 0o644, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write %s: %w", apkRepositoriesFile, err)
	}
	return nil
}

// RenderAPKRepositories renders /etc/apk/repositories from apk_repos and
// its alpine_repo mapping.
func RenderAPKRepositories(section, repo apply.Config) ([]byte, error) {
	version, err := apply.AsString(repo["version"])
	if err != nil {
		return nil, fmt.Errorf("read apk_repos: alpine_repo: version: %w", err)
	}
	base := defaultAlpineMirror
	if repo.Has("base_url") {
		if base, err = apply.AsString(repo["base_url"]); err != nil {
			return nil, fmt.Errorf("read apk_repos: alpine_repo: base_url: %w", err)
		}
	}
	local := ""
	if section.Has("local_repo_base_url") {
		if local, err = apply.AsString(section["local_repo_base_url"]); err != nil {
			return nil, fmt.Errorf("read apk_repos: local_repo_base_url: %w", err)
		}
	}
	vars := map[string]any{
		"alpine_baseurl": base, "alpine_version": version, "local_repo": local,
		"community_enabled": repo["community_enabled"], "testing_enabled": repo["testing_enabled"],
	}
	out, err := jinja.RenderWith([]byte(apkRepositoriesTemplate), vars, jinja.Options{Name: "apk repositories"})
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", apkRepositoriesFile, err)
	}
	return out, nil
}
