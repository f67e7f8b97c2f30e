//go:build !linux

package hugepages

// AdviseHeap returns ErrUnsupported: transparent huge pages are Linux's.
func AdviseHeap(n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	return 0, ErrUnsupported
}
