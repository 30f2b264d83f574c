module github.com/seedinit/seedinit

go 1.26.8

require go.yaml.in/yaml/v3 v3.0.4

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)
