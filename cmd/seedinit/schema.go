package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seedinit/seedinit/apply/schema"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/mime"
)

// runSchema is `cloud-init schema --config-file F | --system [--annotate]`.
func runSchema(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit schema", flag.ContinueOnError)
	var file string
	for _, n := range []string{"config-file", "c"} {
		fs.StringVar(&file, n, "", "cloud-config file to validate")
	}
	system := fs.Bool("system", false, "validate this system's instance user-data and /etc/cloud config")
	rootDir := fs.String("root", "/", "target root for --system")
	annotate := fs.Bool("annotate", false, "print the file with the problems inline")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	var reports []*schema.Report
	switch {
	case file != "" && !*system:
		rep, err := schema.ValidateFile(file)
		if err != nil {
			return fail(stderr, "schema: %v", err)
		}
		reports = append(reports, rep)
	case *system && file == "":
		root, err := rootfs.Open(*rootDir)
		if err != nil {
			return fail(stderr, "schema: %v", err)
		}
		defer root.Close()
		reports, err = schema.ValidateSystem(root)
		if err != nil {
			fmt.Fprintf(stderr, "seedinit: schema: %v\n", err)
		}
	default:
		return fail(stderr, "schema: give --config-file FILE or --system")
	}
	code := exitOK
	for _, rep := range reports {
		out := rep.Format(*annotate)
		// cloud-init prints the verdict on stdout and the error on stderr.
		if i := strings.Index(out, "Error:"); i >= 0 && !*annotate {
			fmt.Fprint(stdout, out[:i])
			fmt.Fprint(stderr, out[i:])
		} else {
			fmt.Fprint(stdout, out)
		}
		if c := rep.ExitCode(*annotate); c != 0 {
			code = c
		}
	}
	return code
}

// runMakeMIME is `cloud-init devel make-mime -a FILE:TYPE ...`.
func runMakeMIME(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit make-mime", flag.ContinueOnError)
	var attach stringList
	for _, n := range []string{"attach", "a"} {
		fs.Var(&attach, n, "FILE:CONTENT-TYPE to add (repeatable)")
	}
	listTypes := fs.Bool("list-types", false, "list the content types seedinit and cloud-init understand")
	fs.BoolVar(listTypes, "l", false, "same as --list-types")
	force := fs.Bool("force", false, "accept unknown content types")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *listTypes {
		fmt.Fprintln(stdout, strings.Join(mime.ListTypes(), "\n"))
		return exitOK
	}
	if len(attach) == 0 {
		return fail(stderr, "make-mime: give at least one -a FILE:TYPE")
	}
	var parts []mime.Part
	for _, a := range attach {
		name, typ, err := mime.ParseAttach(a)
		if err != nil {
			return fail(stderr, "make-mime: %v", err)
		}
		content, err := os.ReadFile(name)
		if err != nil {
			return fail(stderr, "make-mime: %v", err)
		}
		parts = append(parts, mime.Part{Filename: name, Type: typ, Content: content})
	}
	if unknown := mime.UnknownTypes(parts); len(unknown) > 0 {
		level := "ERROR"
		if *force {
			level = "WARNING"
		}
		for _, u := range unknown {
			fmt.Fprintf(stderr, "%s: %s\n", level, u)
		}
		if !*force {
			fmt.Fprintln(stderr, "Invalid content-types, override with --force")
			return exitError
		}
	}
	out, err := mime.MakeMIME(parts)
	if err != nil {
		return fail(stderr, "make-mime: %v", err)
	}
	stdout.Write(out)
	fmt.Fprintln(stdout)
	return exitOK
}
