package telemetry

import "testing"

func TestFingerprintString(t *testing.T) {
	a100 := GPU{Name: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40536 << 20} // usable, a little under 40 GiB
	h100 := GPU{Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 81559 << 20}
	tests := []struct {
		f    Fingerprint
		want string
	}{
		{Fingerprint{GPUs: []GPU{a100, a100}, DriverVersion: "550.54.15", CUDADriverVersion: "12.4"}, "2× NVIDIA A100-SXM4-40GB (40 GiB), driver 550.54.15, CUDA 12.4"},
		{Fingerprint{GPUs: []GPU{h100, a100, h100}, DriverVersion: "550.54.15"}, "2× NVIDIA H100 80GB HBM3 (80 GiB) + 1× NVIDIA A100-SXM4-40GB (40 GiB), driver 550.54.15"},
		{Fingerprint{GPUs: []GPU{{Name: "X"}}}, "1× X"},
		{Fingerprint{}, "no GPU"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	if cudaVersion(12040) != "12.4" || cudaVersion(11080) != "11.8" || cudaVersion(13000) != "13.0" {
		t.Fatal("CUDA version spelling")
	}
}
