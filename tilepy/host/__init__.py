"""What a call hands in, below every stage: array intake, the grid, the specialization parameters,
the GPU driver probe."""
