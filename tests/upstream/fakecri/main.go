// Command fakecri serves the kubelet's fake remote runtime (k8s.io/cri-client/pkg/fake, which
// pkg/kubelet/cri/remote/fake became) on a unix socket, as both the CRI runtime and image service: a
// container runtime that runs no containers, so that a real kubelet can admit pods where none could run.
//
// Built by tests/upstream/build.py; see docs/upstream.md. It stops on SIGTERM or SIGINT and removes its
// socket.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
)

const fakeImageSize = 1 << 20

func main() {
	listen := flag.String("listen", "", "unix socket path (or unix:// URL) to serve the CRI on")
	imageFs := flag.String("image-fs", "", "directory reported as the image filesystem's mount point (ImageFsInfo)")
	flag.Parse()
	if *listen == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "fakecri: usage: fakecri --listen /path/to/cri.sock")
		os.Exit(2)
	}
	endpoint := *listen
	if !strings.HasPrefix(endpoint, "unix://") {
		endpoint = "unix://" + endpoint
	}

	runtime := fake.NewFakeRemoteRuntime()
	// The kubelet asks the runtime for its cgroup driver (KubeletCgroupDriverFromCRI); the fake answers
	// nil unless told, and the kubelet then keeps its configuration's driver. Say cgroupfs, as configured.
	runtime.RuntimeService.FakeLinuxConfiguration = &runtimeapi.LinuxRuntimeConfiguration{
		CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS,
	}
	// A pulled image of size 0 is refused by the kubelet ("Id or size of image ... is not set").
	runtime.ImageService.SetFakeImageSize(fakeImageSize)
	if *imageFs != "" {
		// Without an image filesystem the eviction manager never synchronizes ("imagefs device is not
		// found"): name a directory whose filesystem cadvisor can find.
		usage := &runtimeapi.FilesystemUsage{
			Timestamp:  time.Now().UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: *imageFs},
			UsedBytes:  &runtimeapi.UInt64Value{Value: fakeImageSize},
			InodesUsed: &runtimeapi.UInt64Value{Value: 1},
		}
		runtime.ImageService.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{usage})
	}
	if err := runtime.Start(endpoint); err != nil {
		fmt.Fprintf(os.Stderr, "fakecri: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fakecri: serving the fake CRI runtime and image service on %s\n", endpoint)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	runtime.Stop()
	_ = os.Remove(strings.TrimPrefix(endpoint, "unix://"))
}
