"""The user-facing layer: the Kernel object, `tilepy.launch`, the compiler pipeline, AOT, the
disk index of traced kernels. It uses every part below it; none of them imports it."""
