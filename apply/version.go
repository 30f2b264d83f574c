package apply

// Version is seedinit's version, stamped at build time with
// -ldflags "-X github.com/seedinit/seedinit/apply.Version=...".
var Version = "dev"
