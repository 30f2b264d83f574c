package ds

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// dmiVarFields are the SMBIOS fields a NoCloud seedfrom may name as
// __dmi.NAME__, by dmidecode's names (cloud-init's DMIDECODE_TO_KERNEL),
// with the /sys/class/dmi/id file each is read from on Linux.
var dmiVarFields = map[string]string{
	"baseboard-asset-tag":     "board_asset_tag",
	"baseboard-manufacturer":  "board_vendor",
	"baseboard-product-name":  "board_name",
	"baseboard-serial-number": "board_serial",
	"baseboard-version":       "board_version",
	"bios-release-date":       "bios_date",
	"bios-vendor":             "bios_vendor",
	"bios-version":            "bios_version",
	"chassis-asset-tag":       "chassis_asset_tag",
	"chassis-manufacturer":    "chassis_vendor",
	"chassis-serial-number":   "chassis_serial",
	"chassis-version":         "chassis_version",
	"system-manufacturer":     "sys_vendor",
	"system-product-name":     "product_name",
	"system-serial-number":    "product_serial",
	"system-uuid":             "product_uuid",
	"system-version":          "product_version",
}

// dmiVarRE is cloud-init's pattern: the name runs to the first '_'.
var dmiVarRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`__dmi\.([^_]+)__`) })

// subDMIVars fills the __dmi.NAME__ placeholders of a seedfrom with this
// machine's SMBIOS fields, as cloud-init 23.1's NoCloud does
// (dmi.sub_dmi_vars), so that one command line, serial or image names
// each instance's own seed (`ds=nocloud;s=http://srv/nocloud/__dmi.system-uuid__/`)
// without DHCP or a per-instance image. A name cloud-init does not know
// is left as it is, and a field the machine lacks (or firmware left
// unset) is empty, as there. Unlike cloud-init, which puts values in as
// they are, a value in an http(s) URL is escaped as a path segment: a
// serial with a space or a '/' names one segment, not a broken URL or
// another path.
func subDMIVars(env *Env, seedfrom string) string {
	if !strings.Contains(seedfrom, "__") {
		return seedfrom
	}
	escape := func(s string) string { return s }
	if isHTTP(seedfrom) {
		escape = url.PathEscape
	}
	for _, m := range dmiVarRE().FindAllStringSubmatch(seedfrom, -1) {
		field, ok := dmiVarFields[m[1]]
		if !ok {
			env.Logger().Warn("NoCloud seedfrom: unknown DMI placeholder left as it is", "placeholder", m[0])
			continue
		}
		seedfrom = strings.ReplaceAll(seedfrom, m[0], escape(env.DMIField(field)))
	}
	return seedfrom
}
