// The upstream Gateway API conformance suite, run exactly as upstream's own conformance_test.go
// runs it: conformance.RunConformance takes every option from the suite's own flags. Nothing of
// the suite is copied; this file only lets `go test -c` build it inside this pinned module.
// Written by scripts/install-control-plane.sh --update-modules --conformance.
package conformance_test

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

func TestConformance(t *testing.T) {
	conformance.RunConformance(t)
}
