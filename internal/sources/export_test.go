package sources

import (
	"os"
	"time"
)

// SetAssistantDisk bounds the assistant source's state writes by timeout
// and makes them call sync instead of fsync: tests freeze the disk with it.
func SetAssistantDisk(s Source, timeout time.Duration, sync func(*os.File) error) {
	a := s.(*assistantSource)
	a.writes.Timeout, a.syncFile = timeout, sync
}
