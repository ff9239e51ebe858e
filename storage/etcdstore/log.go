package etcdstore

import "go.uber.org/zap"

// nopLogger silences the etcd client, which logs through zap.
func nopLogger() *zap.Logger { return zap.NewNop() }
