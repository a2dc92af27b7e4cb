"""Fragment layouts transcribed from the PTX ISA (9.7.14.5 "Matrix Fragments for mma.m16n8k8 /
mma.m16n8k16 with floating point type / mma.m16n8k32", and 9.7.14.5.15 "Warp-level matrix load
instruction: ldmatrix"), written here independently of tilepy's C++ emulation so the tests check
the emulation against the documentation, not against itself.

Each function maps (lane, element index i) to a (row, column) of the operand matrix, with the
document's names: groupID = lane >> 2, threadID_in_group = lane % 4. Element i is the i-th
element "low to high" of the lane's fragment registers.
"""


def gid(lane):
    return lane >> 2


def tig(lane):
    return lane % 4


# ---------------------------------------------------------------- mma.m16n8k16, .f16 / .bf16
def a_m16n8k16(lane, i):          # a0..a7
    row = gid(lane) if (0 <= i < 2 or 4 <= i < 6) else gid(lane) + 8
    col = tig(lane) * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def b_m16n8k16(lane, i):          # b0..b3
    row = tig(lane) * 2 + (i & 1) + (8 if i >= 2 else 0)
    return row, gid(lane)


# ---------------------------------------------------------------- mma.m16n8k8, .f16 / .bf16
def a_m16n8k8(lane, i):           # a0..a3
    row = gid(lane) if i < 2 else gid(lane) + 8
    return row, tig(lane) * 2 + (i & 1)


def b_m16n8k8(lane, i):           # b0, b1
    return tig(lane) * 2 + i, gid(lane)


# ---------------------------------------------------------------- mma.m16n8k8, .tf32
def a_m16n8k8_tf32(lane, i):      # a0..a3
    row = gid(lane) if i in (0, 2) else gid(lane) + 8
    col = tig(lane) if i in (0, 1) else tig(lane) + 4
    return row, col


def b_m16n8k8_tf32(lane, i):      # b0, b1
    return (tig(lane) if i == 0 else tig(lane) + 4), gid(lane)


# ---------------------------------------------------------------- mma.m16n8k32, 8-bit types
def a_m16n8k32(lane, i):          # a0..a15
    row = gid(lane) if (0 <= i < 4 or 8 <= i < 12) else gid(lane) + 8
    col = tig(lane) * 4 + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def b_m16n8k32(lane, i):          # b0..b7
    return tig(lane) * 4 + (i & 3) + (16 if i >= 4 else 0), gid(lane)


# ---------------------------------------------------------------- accumulators C / D (all)
def c_m16n8(lane, i):             # c0..c3
    row = gid(lane) if i < 2 else gid(lane) + 8
    return row, tig(lane) * 2 + (i & 1)


# ---------------------------------------------------------------- ldmatrix .m8n8 .b16
def ldmatrix_row_provider(lane):
    """Threads 8j..8j+7 hold addr0-7 of matrix j: (matrix, row) whose start address lane gives."""
    return lane // 8, lane % 8


def ldmatrix_fragment(lane, h, trans):
    """(row, col) of the 8x8 matrix held in half `h` (0 low, 1 high) of the lane's register:
    a group of four threads loads a row, thread 0 the first fragment; .trans: column-major."""
    row, col = lane // 4, 2 * (lane % 4) + h
    return (col, row) if trans else (row, col)
