"""Our own studies: sweep, phases, Nsight Compute, ceilings, portability, architecture resources, sanitizers."""
