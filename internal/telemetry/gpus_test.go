package telemetry

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestResolveGPUs(t *testing.T) {
	machine := []GPU{
		{Index: 0, Name: "NVIDIA GeForce RTX 3090"},
		{Index: 1, Name: "NVIDIA RTX A6000"},
		{Index: 2, Name: "NVIDIA GeForce RTX 3090"},
	}
	list := func() ([]GPU, error) { return machine, nil }
	noNVML := func() ([]GPU, error) { return nil, ErrNoNVML }
	tests := []struct {
		name    string
		sel     []string
		list    func() ([]GPU, error)
		want    []int
		wantErr string
	}{
		{name: "indices without NVML", sel: []string{"1", "0"}, list: noNVML, want: []int{1, 0}},
		{name: "name substring, case-insensitive", sel: []string{"a6000"}, list: list, want: []int{1}},
		{name: "same name twice takes two GPUs", sel: []string{"RTX 3090", "RTX 3090"}, list: list, want: []int{0, 2}},
		{name: "index then name skips the taken one", sel: []string{"0", "RTX 3090"}, list: list, want: []int{0, 2}},
		{name: "no match lists the machine's GPUs", sel: []string{"H100"}, list: list, wantErr: `no free GPU matches "H100" (GPUs on this machine: 0: NVIDIA GeForce RTX 3090; 1: NVIDIA RTX A6000; 2: NVIDIA GeForce RTX 3090)`},
		{name: "too many of one name", sel: []string{"RTX 3090", "RTX 3090", "RTX 3090"}, list: list, wantErr: `no free GPU matches "RTX 3090"`},
		{name: "name without NVML says use indices", sel: []string{"RTX 3090"}, list: noNVML, wantErr: "select GPUs by index instead"},
		{name: "index twice", sel: []string{"0", "0"}, list: list, wantErr: "GPU 0 selected twice"},
		{name: "negative index", sel: []string{"-1"}, list: list, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveGPUs(tt.sel, tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResolveGPUsListsOnlyForNames(t *testing.T) {
	called := false
	_, err := ResolveGPUs([]string{"0", "1"}, func() ([]GPU, error) { called = true; return nil, errors.New("boom") })
	if err != nil || called {
		t.Fatalf("index-only selection must not need NVML: err=%v called=%v", err, called)
	}
}

// TestCUDADevicesEnv: devices named by NVML index (the fallback when NVML
// cannot name them by UUID), in the order given, numbered as NVML numbers
// them (PCI bus order).
func TestCUDADevicesEnv(t *testing.T) {
	got := CUDADevicesEnv([]string{"2", "0"})
	want := []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=2,0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
