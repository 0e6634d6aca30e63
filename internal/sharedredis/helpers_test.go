package sharedredis_test

import "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"

// newReplica is one exporter's connection to the shared Redis, with its
// own pool and metrics, as a separate process would have. Its calls take
// the default timeout (2 s): a test of a Redis that does not answer sets
// a shorter one, and no other waits on a short deadline that a loaded
// machine could miss.
var newReplica = testutil.NewSharedRedis
