//go:build cgo && linux

package telemetry

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// No GPU here: go-nvml's dgxa100 mock (8 mock A100-SXM4-40GB, driver
// 550.54.15, CUDA 12040) stands in for the driver.
func TestGPUFingerprintMock(t *testing.T) {
	srv := dgxa100.New()
	srv.Devices = srv.Devices[:2]
	srv.SystemGetCudaDriverVersion_v2Func = func() (int, nvml.Return) { return srv.CudaDriverVersion, nvml.SUCCESS }
	f, err := GPUFingerprint(srv)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2× Mock NVIDIA A100-SXM4-40GB (40 GiB), driver 550.54.15, CUDA 12.4"; f.String() != want {
		t.Fatalf("got  %s\nwant %s", f, want)
	}
	d1 := srv.Devices[1].(*server.Device)
	if len(f.GPUs) != 2 || f.GPUs[1].UUID != d1.UUID || f.GPUs[1].Index != 1 || f.GPUs[1].MemoryBytes != 40<<30 {
		t.Fatalf("GPUs %+v", f.GPUs)
	}
	if again, _ := GPUFingerprint(srv); again.String() != f.String() {
		t.Fatalf("not deterministic: %s, then %s", f, again)
	}

	// Without the _v2 call (the mock's default): the older one.
	srv.SystemGetCudaDriverVersion_v2Func = nil
	if f, err := GPUFingerprint(srv); err != nil || f.CUDADriverVersion != "12.4" {
		t.Fatalf("fallback: %+v, %v", f, err)
	}

	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	if _, err := GPUFingerprint(lib); !errors.Is(err, ErrNoNVML) {
		t.Fatalf("err = %v, want ErrNoNVML", err)
	}
	if _, err := NVMLFingerprint(); err != nil && !errors.Is(err, ErrNoNVML) {
		t.Logf("NVML present but failed: %v", err)
	}
}
