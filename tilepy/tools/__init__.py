"""Developer tools (not imported by the compiler): SASS statistics of cubins."""
