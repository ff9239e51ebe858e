// Package kindstatus holds the part of the error-to-status mapping that
// the HTTP adapters share: the statuses of the kinds of error that say what
// became of a request rather than what the request asked. A store or
// directory out of reach, a body or result too large, a caller gone and a
// deadline passed are answered alike whatever the dialect; each adapter
// keeps its own table for the kinds its system answers in its own way
// (not found, invalid, conflict, rights).
package kindstatus

import (
	"net/http"

	"github.com/keelhq/keel"
)

// StatusClientClosed is the status of a request whose caller went away
// (keel.KindCanceled), as nginx logs it; nobody reads it.
const StatusClientClosed = 499

// common is the table of the kinds every adapter answers alike.
var common = map[keel.Kind]int{
	keel.KindTooLarge:         http.StatusRequestEntityTooLarge,
	keel.KindUnavailable:      http.StatusServiceUnavailable,
	keel.KindCanceled:         StatusClientClosed,
	keel.KindDeadlineExceeded: http.StatusGatewayTimeout,
}

// Of returns the status of kind: its entry in the adapter's table, or
// else in the common one, or else 500 (keel.KindInternal,
// keel.KindUnknown and any kind neither table holds).
func Of(table map[keel.Kind]int, kind keel.Kind) int {
	if s, ok := table[kind]; ok {
		return s
	}
	if s, ok := common[kind]; ok {
		return s
	}
	return http.StatusInternalServerError
}
