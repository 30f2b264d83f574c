// Package known lists the top-level cloud-config keys that cloud-init
// 22.4.2 defines, so the runner can tell a key seedinit does not implement
// ("known to cloud-init, not supported by seedinit") from a typo.
package known

// KnownKeys are the top-level properties of cloud-init 22.4.2's
// schema-cloud-config-v1.json, sorted. The list is checked against the
// installed schema by TestKnownKeysMatchSchema.
var KnownKeys = []string{
	"allow_public_ssh_keys",
	"ansible",
	"apk_repos",
	"apt",
	"apt_pipelining",
	"apt_reboot_if_required",
	"apt_update",
	"apt_upgrade",
	"authkey_hash",
	"autoinstall",
	"bootcmd",
	"byobu_by_default",
	"ca-certs",
	"ca_certs",
	"chef",
	"chpasswd",
	"cloud_config_modules",
	"cloud_final_modules",
	"cloud_init_modules",
	"device_aliases",
	"disable_ec2_metadata",
	"disable_root",
	"disable_root_opts",
	"disk_setup",
	"drivers",
	"fan",
	"final_message",
	"fqdn",
	"fs_setup",
	"groups",
	"growpart",
	"grub-dpkg",
	"grub_dpkg",
	"hostname",
	"keyboard",
	"landscape",
	"locale",
	"locale_configfile",
	"lxd",
	"manage_etc_hosts",
	"manage_resolv_conf",
	"mcollective",
	"migrate",
	"mount_default_fields",
	"mounts",
	"no_ssh_fingerprints",
	"ntp",
	"package_reboot_if_required",
	"package_update",
	"package_upgrade",
	"packages",
	"password",
	"phone_home",
	"power_state",
	"prefer_fqdn_over_hostname",
	"preserve_hostname",
	"puppet",
	"random_seed",
	"reporting",
	"resize_rootfs",
	"resolv_conf",
	"rh_subscription",
	"rsyslog",
	"runcmd",
	"salt_minion",
	"snap",
	"spacewalk",
	"ssh",
	"ssh_authorized_keys",
	"ssh_deletekeys",
	"ssh_fp_console_blacklist",
	"ssh_genkeytypes",
	"ssh_import_id",
	"ssh_key_console_blacklist",
	"ssh_keys",
	"ssh_publish_hostkeys",
	"ssh_pwauth",
	"ssh_quiet_keygen",
	"swap",
	"timezone",
	"ubuntu_advantage",
	"updates",
	"user",
	"users",
	"vendor_data",
	"wireguard",
	"write_files",
	"yum_repo_dir",
	"yum_repos",
	"zypper",
}

var knownSet = func() map[string]bool {
	m := make(map[string]bool, len(KnownKeys))
	for _, k := range KnownKeys {
		m[k] = true
	}
	return m
}()

// IsKnown reports whether cloud-init 22.4.2's schema defines key at the top
// level of a cloud-config.
func IsKnown(key string) bool { return knownSet[key] }
