package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// profiles writes pprof profiles of one command, for `make bench` and for
// anyone chasing where a pass spends its time or memory.
type profiles struct {
	cpuPath, heapPath string
	cpu               *os.File
}

func (p *profiles) start() error {
	if p.cpuPath == "" {
		return nil
	}
	f, err := os.Create(p.cpuPath)
	if err != nil {
		return fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--cpu-profile: %w", err)
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and writes the heap profile: what is live now
// and, as alloc_space, everything allocated since the start.
func (p *profiles) stop() error {
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		errs = append(errs, p.cpu.Close())
		p.cpu = nil
	}
	if p.heapPath != "" {
		f, err := os.Create(p.heapPath)
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("--heap-profile: %w", err))...)
		}
		errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
	}
	return errors.Join(errs...)
}
