module github.com/keelhq/keel

go 1.26

require (
	github.com/hashicorp/go-immutable-radix/v2 v2.1.0
	github.com/hashicorp/go-multierror v1.1.1
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
