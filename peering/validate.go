package peering

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
)

// Limits of Meta, as Consul's.
const (
	maxMetaPairs    = 64
	maxMetaKeyLen   = 128
	maxMetaValueLen = 512
	maxNameLen      = 63
)

// validName reports whether name is a DNS label: lower-case letters,
// digits and "-", at most 63, starting and ending alphanumeric.
func validName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1) {
			return false
		}
	}
	return true
}

// validAddress reports whether a is host:port with a port in 1..65535.
func validAddress(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" || strings.ContainsAny(host, " /") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535
}

func checkName(v *keel.Validation, name string) {
	if !validName(name) {
		v.Add("PeerName", "%q is not a DNS hostname label (lower-case letters, digits and '-', at most 63, starting and ending alphanumeric)", name)
	}
}

func checkPartition(v *keel.Validation, p string) {
	if p != "" && p != DefaultPartition {
		v.Add("Partition", "partitions other than %q are not supported", DefaultPartition)
	}
}

func checkMeta(v *keel.Validation, meta map[string]string) {
	if len(meta) > maxMetaPairs {
		v.Add("Meta", "at most %d pairs, got %d", maxMetaPairs, len(meta))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range meta {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		switch {
		case k == "":
			v.Add("Meta", "a key is empty")
		case len(k) > maxMetaKeyLen:
			v.Add("Meta", "key %q is longer than %d", k[:16]+"…", maxMetaKeyLen)
		}
		if len(meta[k]) > maxMetaValueLen {
			v.Add("Meta", "the value of %q is longer than %d", k, maxMetaValueLen)
		}
	}
}

func checkAddresses(v *keel.Validation, field string, addrs []string) {
	for _, a := range addrs {
		if !validAddress(a) {
			v.Add(field, "%q is not {host or IP}:port", a)
		}
	}
}

// normServices returns names sorted and without duplicates; empty names
// are a validation problem.
func normServices(v *keel.Validation, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n == "" {
			v.Add("ExportedServices", "a service name is empty")
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
