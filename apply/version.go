package apply

// Version is seedinit's version and Commit the commit it was built from,
// stamped at build time by scripts/build-seedinit with
// -ldflags "-X github.com/seedinit/seedinit/apply.Version=... -X ...Commit=...".
var (
	Version = "dev"
	Commit  = ""
)
