// Test fixtures only: small static programs that the local cluster's real node runs as images
// (src/devcluster/images.ts builds them FROM scratch). Standard library only, so nothing is
// downloaded to build them.
module hoist.local/testimages

go 1.24
