"""test_ml_dtypes.py CODES_OUT — suite numerics: halflab's narrow formats against
ml_dtypes, an independent implementation (Google's numpy types), bit for bit.

  - every fp32 input (all 2^32) rounded to e4m3, e5m2, e2m3, e3m2 and e2m1 to
    nearest with ties to even, and to e8m0 to nearest with ties away (ml_dtypes'
    rule for its scale type): halflab's codes (CODES_OUT, the CPU conversion
    kernel) equal ml_dtypes' astype codes, except on NaN inputs, where the rules
    differ on purpose and each side must give exactly its documented code:
      e5m2   halflab 0x7f / 0xff (the GPU's cvt, PyTorch)  ml_dtypes 0x7e / 0xfe
      fp6    halflab +-max (no NaN in the format)           ml_dtypes a zero of the other sign
      fp4    halflab +-max                                   ml_dtypes a zero of the other sign
  - e8m0 to nearest with ties to EVEN (halflab's default rule): ml_dtypes rounds
    every tie up; on all 255 ties halflab gives the even code instead, and on
    2^20 random inputs that are no tie the same code as ml_dtypes;
  - every code of each format decoded: the same fp32 bits (NaNs: both NaN).

The 2^32 sweep runs in chunks of 2^24 inputs on two processes; each streams
its part of halflab's codes from its own CODES_OUT and compares it with
numpy's, and a chunk that differs names its first differing inputs.
Exit status: 0 when everything matches, 1 otherwise."""
import multiprocessing
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

CHUNK = 1 << 20           # inputs compared at a time
PART = 1 << 28            # inputs one codes_out process streams
PROCESSES = 2
SHOWN = 8                 # differing inputs printed per format

# name, ml_dtypes type, halflab rounding, code width, and the NaN codes of a
# positive and a negative NaN input: halflab's, ml_dtypes'
FORMATS = [
    ("e4m3", ml_dtypes.float8_e4m3fn, "nearest-even", 8, (0x7f, 0xff), (0x7f, 0xff)),
    ("e5m2", ml_dtypes.float8_e5m2, "nearest-even", 8, (0x7f, 0xff), (0x7e, 0xfe)),
    ("e2m3", ml_dtypes.float6_e2m3fn, "nearest-even", 6, (0x1f, 0x3f), (0x20, 0x00)),
    ("e3m2", ml_dtypes.float6_e3m2fn, "nearest-even", 6, (0x1f, 0x3f), (0x20, 0x00)),
    ("e2m1", ml_dtypes.float4_e2m1fn, "nearest-even", 4, (0x7, 0xf), (0x8, 0x0)),
    ("e8m0", ml_dtypes.float8_e8m0fnu, "nearest-away", 8, (0xff, 0xff), (0xff, 0xff)),
]
BY_NAME = {f[0]: f for f in FORMATS}
CODES_OUT = sys.argv[1] if len(sys.argv) == 2 else None


def codes_out(*args, stdin=None):
    return subprocess.Popen([CODES_OUT, *map(str, args)], stdin=stdin, stdout=subprocess.PIPE)


def read_exactly(stream, buffer):
    view, got = memoryview(buffer), 0
    while got < len(view):
        n = stream.readinto(view[got:])
        if not n:
            raise RuntimeError("codes_out stopped early")
        got += n


def ml_dtypes_codes(kind, inputs):
    return np.asarray(inputs.view(np.float32).astype(kind)).view(np.uint8)


def compare_part(first):
    """PART inputs from `first` in every format, halflab's from one codes_out
    stream: per format, (inputs that differ, the first of them as (bits,
    halflab, ml_dtypes), NaN inputs that differ as documented); seconds."""
    start = time.monotonic()
    offsets = np.arange(CHUNK, dtype=np.uint32)
    inputs = np.empty(CHUNK, dtype=np.uint32)
    ours = np.empty(CHUNK, dtype=np.uint8)
    results = {f[0]: [0, [], 0] for f in FORMATS}
    process = codes_out("encode", first, PART, CHUNK, *(f"{f[0]}:{f[2]}" for f in FORMATS))
    for chunk_first in range(first, first + PART, CHUNK):
        np.add(offsets, np.uint32(chunk_first), out=inputs)
        holds_nan = (chunk_first & 0x7f800000) == 0x7f800000  # the exponent field is all ones
        for name, kind, _, _, ours_nan, theirs_nan in FORMATS:
            read_exactly(process.stdout, ours)
            theirs = ml_dtypes_codes(kind, inputs)
            if not holds_nan and np.array_equal(ours, theirs):
                continue
            nan = (inputs & 0x7fffffff) > 0x7f800000
            negative = (inputs >> 31).astype(bool)
            # NaN inputs: each side exactly its documented code; the rest: the same code
            want_ours = np.where(nan, np.where(negative, ours_nan[1], ours_nan[0]), ours)
            want_theirs = np.where(nan, np.where(negative, theirs_nan[1], theirs_nan[0]), ours)
            bad = np.flatnonzero((ours != want_ours) | (theirs != want_theirs))
            result = results[name]
            result[0] += bad.size
            result[1] += [(int(inputs[i]), int(ours[i]), int(theirs[i])) for i in bad[:SHOWN]]
            result[2] += int(np.count_nonzero(nan & (ours != theirs)))
    process.stdout.close()
    if process.wait() != 0:
        raise RuntimeError(f"codes_out encode failed with status {process.returncode}")
    return results, time.monotonic() - start


def sweep(pool):
    failures, seconds = 0, 0.0
    totals = {f[0]: [0, [], 0] for f in FORMATS}
    for results, part_seconds in pool.imap_unordered(compare_part, range(0, 1 << 32, PART)):
        seconds += part_seconds
        for name, (differing, shown, nan_differences) in results.items():
            totals[name][0] += differing
            totals[name][1] += shown
            totals[name][2] += nan_differences
    for name, _, rounding, _, ours_nan, theirs_nan in FORMATS:
        differing, shown, nan_differences = totals[name]
        print(f"{name} {rounding}: all 2^32 fp32 inputs, {differing} differ from ml_dtypes; "
              f"{nan_differences} NaN inputs differ as documented (halflab 0x{ours_nan[0]:x}/0x{ours_nan[1]:x}, "
              f"ml_dtypes 0x{theirs_nan[0]:x}/0x{theirs_nan[1]:x})")
        for bits, ours, theirs in sorted(shown)[:SHOWN]:
            print(f"  fp32 0x{bits:08x} ({np.uint32(bits).view(np.float32)!r}): halflab 0x{ours:02x}, "
                  f"ml_dtypes 0x{theirs:02x}")
        failures += differing > 0
    print(f"the sweep: {seconds:.1f} s of process time in {PROCESSES} processes")
    return failures


def check_decoding():
    failures = 0
    for name, kind, _, width, _, _ in FORMATS:
        count = 1 << width
        process = codes_out("decode", name)
        ours = np.frombuffer(process.stdout.read(), dtype=np.uint32)
        if process.wait() != 0 or ours.size != count:
            raise RuntimeError(f"codes_out decode {name} failed")
        theirs = np.arange(count, dtype=np.uint8).view(kind).astype(np.float32).view(np.uint32)
        both_nan = np.isnan(ours.view(np.float32)) & np.isnan(theirs.view(np.float32))
        bad = np.flatnonzero((ours != theirs) & ~both_nan)
        print(f"{name}: all {count} codes decoded, {bad.size} differ from ml_dtypes "
              f"({np.count_nonzero(both_nan)} NaN codes)")
        for c in bad[:SHOWN]:
            print(f"  code 0x{c:02x}: halflab 0x{ours[c]:08x}, ml_dtypes 0x{theirs[c]:08x}")
        failures += bad.size > 0
    return failures


def encode_list(name, rounding, inputs):
    process = codes_out("encode-list", f"{name}:{rounding}", stdin=subprocess.PIPE)
    ours, _ = process.communicate(inputs.astype(np.uint32).tobytes())
    if process.returncode != 0:
        raise RuntimeError(f"codes_out encode-list {name} failed")
    return np.frombuffer(ours, dtype=np.uint8)


def check_e8m0_ties():
    """ml_dtypes rounds a tie between two powers of two up; halflab to the even code."""
    # 1.5 2^(c-127) for c = 1..254 (fp32 normals), and 1.5 2^-127 (an fp32 subnormal)
    ties = np.array([(c << 23) | 0x400000 for c in range(1, 255)] + [0x600000], dtype=np.uint32)
    below = np.array(list(range(1, 255)) + [0], dtype=np.int64)
    ours = encode_list("e8m0", "nearest-even", ties)
    theirs = ml_dtypes_codes(ml_dtypes.float8_e8m0fnu, ties)
    ml_up = np.where(below + 1 > 254, 0xff, below + 1)  # ml_dtypes: up, NaN past 2^127
    want = below + (below & 1)                           # halflab: the even one of the two
    bad = np.flatnonzero((ours != want) | (theirs != ml_up))
    print(f"e8m0 nearest-even: {ties.size} ties: halflab the even code, ml_dtypes the code above "
          f"({np.count_nonzero(ours != theirs)} differ); {bad.size} break that rule")
    # no tie: the same code
    rng = np.random.default_rng(2026)
    inputs = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    inputs = inputs[~np.isin(inputs, ties)]
    other = np.flatnonzero(encode_list("e8m0", "nearest-even", inputs) != ml_dtypes_codes(ml_dtypes.float8_e8m0fnu, inputs))
    print(f"e8m0 nearest-even: {inputs.size} random inputs that are no tie, {other.size} differ from ml_dtypes")
    for i in other[:SHOWN]:
        print(f"  fp32 0x{inputs[i]:08x}")
    return (bad.size > 0) + (other.size > 0)


def main():
    if CODES_OUT is None:
        print("usage: test_ml_dtypes.py CODES_OUT", file=sys.stderr)
        return 2
    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}")
    start = time.monotonic()
    failures = check_decoding() + check_e8m0_ties()
    with multiprocessing.get_context("fork").Pool(PROCESSES) as pool:
        failures += sweep(pool)
    print(f"{time.monotonic() - start:.1f} s; {'FAILED' if failures else 'all match'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
