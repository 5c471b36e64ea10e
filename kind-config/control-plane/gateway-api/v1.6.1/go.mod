// The Gateway API CRD bundle v1.6.1, read from config/crd/ of the module (not downloaded from a
// release page). Written by scripts/install-control-plane.sh --update-modules.
module layout-gate.local/control-plane/gateway-api

go 1.25.0

require sigs.k8s.io/gateway-api v1.6.1
