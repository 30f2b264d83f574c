package disksetup

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

const unsafeSizeofBlkpgPartition = unsafe.Sizeof(unix.BlkpgPartition{})

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

func keepAlive(v ...any) {
	for _, x := range v {
		runtime.KeepAlive(x)
	}
}
