package sharedredis

import "context"

// LibraryLog logs a line as go-redis does (tests).
func LibraryLog(format string, v ...any) { redisLog.Printf(context.Background(), format, v...) }
