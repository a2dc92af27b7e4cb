"""A child of `doctor --gpu` (benchmarks/gpu_isolate.py) on the fake driver, for the tests:
`python tests/gpu_child.py [--fault KERNEL] ITEMS_JSON`. With --fault, the launch of KERNEL is an
illegal address, as on the GPU of issue 26: the kernel stops, and every later driver call of the
process (the copy back, the next cuMemAlloc) fails with the same sticky error."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "tutorials"), ROOT]
# (tests/ first: its `fuzz` package, not benchmarks/fuzz.py)

from fake_driver import FakeDriver, fake_launch  # noqa: E402
from gpu_items import child_main  # noqa: E402
from tilepy.cuda_c.names import kernel_symbol  # noqa: E402

ILLEGAL = "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"


class FaultyDriver(FakeDriver):
    def __init__(self, fault: str):
        super().__init__(devices=1)
        self.fault = fault
        self.core.launch = self.launch

    def launch(self, stream, config, kernel, *args):
        if kernel.name in {kernel_symbol(k) for k in self.fault.split(",")}:   # the C++ symbol
            self.sticky = ILLEGAL
            return
        self.raise_sticky()
        fake_launch(stream, config, kernel, *args)

    def alloc(self, nbytes):
        self.raise_sticky()
        return super().alloc(nbytes)

    def to_host(self, host, ptr):
        self.raise_sticky()
        super().to_host(host, ptr)


if __name__ == "__main__":
    argv = sys.argv[1:]
    fault = argv[argv.index("--fault") + 1] if "--fault" in argv else ""
    with FaultyDriver(fault):
        sys.exit(child_main(argv[-1]))
