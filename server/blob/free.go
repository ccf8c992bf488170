package blob

import (
	"fmt"
	"syscall"
)

// FreeBytes is how many bytes the filesystem holding the blobs has free for
// an unprivileged writer, for the uploads' free-space watermark.
func (l *Local) FreeBytes() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(l.dir, &st); err != nil {
		return 0, fmt.Errorf("blob: free space of %s: %w", l.dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
