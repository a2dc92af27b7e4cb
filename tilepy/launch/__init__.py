"""Running compiled kernels: argument intake, the CPU backend, NVRTC, launching."""
