package kindstatus_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/kindstatus"
)

func TestOf(t *testing.T) {
	table := map[keel.Kind]int{keel.KindNotFound: http.StatusNotFound, keel.KindUnavailable: http.StatusBadGateway}
	for _, tc := range []struct {
		kind keel.Kind
		want int
	}{
		{keel.KindNotFound, http.StatusNotFound},              // the adapter's
		{keel.KindUnavailable, http.StatusBadGateway},         // the adapter's wins
		{keel.KindTooLarge, http.StatusRequestEntityTooLarge}, // common
		{keel.KindCanceled, kindstatus.StatusClientClosed},
		{keel.KindDeadlineExceeded, http.StatusGatewayTimeout},
		{keel.KindInvalid, http.StatusInternalServerError}, // in neither
		{keel.KindInternal, http.StatusInternalServerError},
		{keel.KindUnknown, http.StatusInternalServerError},
	} {
		if got := kindstatus.Of(table, tc.kind); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.kind, got, tc.want)
		}
	}
}

func ExampleOf() {
	vault := map[keel.Kind]int{keel.KindInvalid: http.StatusBadRequest}
	err := fmt.Errorf("kv: %w", keel.KindUnavailable)
	fmt.Println(kindstatus.Of(vault, keel.KindInvalid), kindstatus.Of(vault, keel.KindOf(err)))
	// Output: 400 503
}
