// Package leasestorm is the storm test of the lease manager (issue 26): a
// million leases due within the same second on bbolt, a tenth of whose
// revocations fail.
package leasestorm
