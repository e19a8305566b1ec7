"""quantize_reference.py MODE QUANTIZE_DUMP SOURCE_ROOT — halflab's CPU
quantizers (kernels/quantize.h, run through the quantize_dump program)
against an independent reference, bit for bit, on random and adversarial
matrices (ties, clipped block maxima, fp32 subnormals, zeros, NaN, inf,
blocks cut by the edges), along rows and down columns.

MODE ml_dtypes: every rule and element format against the rules written out
here in numpy, with ml_dtypes' fp32 -> element casts (nearest-even) for the
elements and E4M3 block scales: codes, scale codes, block and tensor scales,
dequantized values and the counts. Runs on scripts/reference-python.sh's
interpreter.

MODE torchao: MX (FLOOR, RCEIL; all five elements) and NVFP4 against
torchao's to_mx and nvfp4_quantize on the CPU, leaving out what
docs/quantize.md lists as torchao's differences: blocks whose E8M0 code is 0
(torchao scales them by 2^-126 under FLOOR and by 1 under RCEIL), RCEIL
blocks where torchao's fp32 log2 misses the exact power of two, blocks holding
a NaN (torchao's fp6 and fp4 casts give no defined code for it), and NVFP4's
dequantized values (torchao multiplies the two scales first). Runs on
scripts/peer-python.sh's interpreter with torchao.

Exits 77 (skipped) with one line saying why when the interpreter or its
packages are missing."""
import os
import struct
import subprocess
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
ELEMENTS = ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]
ELEMENT_MAX = {"e4m3": 448.0, "e5m2": 57344.0, "e2m3": 7.5, "e3m2": 28.0, "e2m1": 6.0}
ELEMENT_EMAX = {"e4m3": 8, "e5m2": 15, "e2m3": 2, "e3m2": 4, "e2m1": 2}
ELEMENT_MAN_BITS = {"e4m3": 3, "e5m2": 2, "e2m3": 3, "e3m2": 2, "e2m1": 1}
ELEMENT_BITS = {"e4m3": 7, "e5m2": 7, "e2m3": 5, "e3m2": 5, "e2m1": 3}  # magnitude bits below the sign


def skip(why):
    """Exit 77, or fail where the reference is required (CI: HALFLAB_REQUIRE_REFERENCE for ml_dtypes,
    HALFLAB_REQUIRE_PEER for torchao)."""
    required = os.environ.get("HALFLAB_REQUIRE_PEER" if MODE == "torchao" else "HALFLAB_REQUIRE_REFERENCE") == "1"
    print(("required but missing: " if required else "skipped: ") + why)
    sys.exit(1 if required else 77)


def reexec_with(locator, mode, dump, root):
    """Runs this script again on the interpreter that `locator` prints, or skips."""
    locator = os.path.join(root, "scripts", locator)
    if mode == "torchao":  # without torchao, skip before the locator's import of torch (seconds)
        venv = subprocess.run([locator, "--venv"], capture_output=True, text=True).stdout.strip()
        python = os.path.join(venv, "bin", "python")
        probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torchao') is None)"
        if os.access(python, os.X_OK) and subprocess.run([python, "-c", probe]).returncode == 1:
            skip("torchao is not installed beside the PyTorch peer; scripts/setup.sh --peers installs it")
    found = subprocess.run([locator], capture_output=True, text=True)
    if found.returncode != 0:
        skip(found.stderr.strip().splitlines()[-1] if found.stderr.strip() else locator + " found no interpreter")
    python = found.stdout.strip()
    os.execv(python, [python, __file__, mode, dump, root, "--on-reference"])


# ------------------------------------------------------------------ matrices

def matrices(np):
    """(name, rows, cols, values): random, adversarial and special matrices."""
    rng = np.random.default_rng(20261206)
    out = []
    x = (rng.standard_normal((64, 96)) * np.exp2(rng.integers(-6, 7, (64, 96)))).astype(np.float32)
    out.append(("random", x))
    out.append(("random-edges", (rng.standard_normal((37, 45)) * 3).astype(np.float32)))
    # ties: each row's elements are midpoints of adjacent codes (e2m1, fp6, e4m3) times 2^k, and
    # each 16 elements hold a maximum that makes the block's scale 2^k (or clips, or moves it)
    t = np.zeros((64, 96), np.float32)
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.0625, 0.1875, 0.3125, 7.25, 464.0 / 64, 0.001953125 * 1.5],
                    np.float32)
    for r in range(64):
        k = int(rng.integers(-20, 20))
        row = rng.choice(mids, 96) * np.float32(2.0 ** k) * rng.choice(np.array([-1, 1], np.float32), 96)
        for c0 in range(0, 96, 16):
            row[c0 + int(rng.integers(0, 16))] = np.float32(rng.choice([6.0, 7.0, 7.5, 28.0, 448.0, 480.0, 57344.0])) * np.float32(2.0 ** k)
        t[r] = row
    out.append(("ties", t))
    # clipping: block maxima whose mantissa passes the element's (FLOOR clips them)
    c = (rng.uniform(-1, 1, (32, 64)) * 4).astype(np.float32)
    c[:, ::16] = np.float32(1.99) * np.exp2(rng.integers(-3, 9, (32, 4))).astype(np.float32)
    out.append(("clipping", c))
    # tiny: fp32 subnormals, powers of two near E8M0's ends, zeros, huge values
    tiny = np.zeros((32, 64), np.float32)
    tiny[0:4] = (rng.uniform(-1, 1, (4, 64)) * 1e-39).astype(np.float32)
    tiny[4:8] = (rng.uniform(-1, 1, (4, 64)) * 2.0 ** -120).astype(np.float32)
    tiny[8:10] = np.float32(2.0 ** -130)
    tiny[10:12] = (rng.uniform(-1, 1, (2, 64)) * 3e38).astype(np.float32)
    tiny[12, 5] = np.float32(1e-45)
    # block maxima one ulp above max * 2^k: amax / max lands an ulp above a power of two, where
    # an inexact log2 misses the rounding up (torchao's CPU RCEIL)
    tiny[16:] = (rng.uniform(-1, 1, (16, 64)) * 0.01).astype(np.float32)
    for i in range(32):
        m, k = list(ELEMENT_MAX.values())[i % 5], [-20, 5, 20, -3, 1][i // 5 % 5]
        tiny[16 + i // 2, (i % 2) * 32 + i % 7] = np.nextafter(np.float32(m * 2.0 ** k), np.float32(np.inf))
    out.append(("tiny", tiny))
    # specials: a NaN in one block, inf in another (torchao's mode leaves the NaN blocks out)
    s = (rng.standard_normal((32, 64))).astype(np.float32)
    s[3, 7] = np.nan
    s[9, 40] = np.inf
    s[20, 2] = -np.inf
    s[30, 33] = np.nan
    out.append(("specials", s))
    return out


# ------------------------------------------------------------------ the program

def run_dump(np, dump, jobs):
    """jobs: (rule, element, block_rows, block_cols, x) -> one dict of outputs per job."""
    feed = bytearray()
    for rule, element, br, bc, x in jobs:
        feed += f"{rule} {element} {br} {bc} {x.shape[0]} {x.shape[1]}\n".encode()
        feed += np.ascontiguousarray(x, dtype="<f4").tobytes()
    done = subprocess.run([dump], input=bytes(feed), capture_output=True)
    if done.returncode != 0:
        sys.exit(f"quantize_dump failed ({done.returncode}): {done.stderr.decode().strip()}")
    data, at, outs = done.stdout, 0, []

    def take(count, dtype):
        nonlocal at
        size = count * np.dtype(dtype).itemsize
        a = np.frombuffer(data[at:at + size], dtype=dtype)
        at += size
        return a

    for rule, element, br, bc, x in jobs:
        rows, cols = x.shape
        gr, gc = grid(rule, br, bc, rows, cols)
        o = {"codes": take(rows * cols, np.uint8).reshape(rows, cols),
             "scale_codes": take(gr * gc, np.uint8).reshape(gr, gc),
             "block_scales": take(gr * gc, "<f4").reshape(gr, gc)}
        o["tensor_scale"], o["encode_scale"] = take(2, "<f4")
        o["dequantized"] = take(rows * cols, "<f4").reshape(rows, cols)
        o["counts"] = take(7, "<u8")
        o["amax"] = take(1, "<f4")[0]
        outs.append(o)
    if at != len(data):
        sys.exit("quantize_dump wrote more than its jobs' outputs")
    return outs


def grid(rule, br, bc, rows, cols):
    if rule == "tensor":
        return 1, 1
    return -(-rows // br), -(-cols // bc)


def blocks_of(np, x, br, bc):
    """x zero-padded to whole blocks, as (grid_rows, br, grid_cols, bc)."""
    rows, cols = x.shape
    gr, gc = -(-rows // br), -(-cols // bc)
    padded = np.zeros((gr * br, gc * bc), np.float32)
    padded[:rows, :cols] = x
    return padded.reshape(gr, br, gc, bc)


def spread(np, per_block, br, bc, rows, cols):
    """A per-block array repeated over its block's elements."""
    return np.repeat(np.repeat(per_block, br, axis=0), bc, axis=1)[:rows, :cols]


# ------------------------------------------------------------------ the reference

def floor_log2(np, a):
    """floor(log2 a) of finite a > 0 (float32 subnormals included), exactly via frexp."""
    _, e = np.frexp(a.astype(np.float64))
    return e - 1


def ceil_log2(np, a):
    m, e = np.frexp(a.astype(np.float64))
    return np.where(m == 0.5, e - 1, e)


def reference(np, ml, rule, element, br, bc, x):
    """The rules as kernels/quantize.h states them, written out independently."""
    f32 = np.float32
    dtype = {"e4m3": ml.float8_e4m3fn, "e5m2": ml.float8_e5m2, "e2m3": ml.float6_e2m3fn,
             "e3m2": ml.float6_e3m2fn, "e2m1": ml.float4_e2m1fn}[element]
    emax, max_elem = ELEMENT_EMAX[element], f32(ELEMENT_MAX[element])
    rows, cols = x.shape
    if rule == "tensor":
        br, bc = rows, cols
    with np.errstate(all="ignore"):
        amax = np.max(np.abs(blocks_of(np, x, br, bc)), axis=(1, 3)).astype(np.float32)
        tensor_amax = np.max(np.abs(x)).astype(np.float32)
        finite, nan = np.isfinite(amax), np.isnan(amax)
        positive = finite & (amax > 0)
        tensor_scale, encode_scale = f32(1.0), f32(1.0)
        scale_codes = np.zeros(amax.shape, np.uint8)
        divide = False
        if rule in ("mx-floor", "mx-rceil"):
            if rule == "mx-floor":
                k = np.where(positive, floor_log2(np, np.where(positive, amax, 1)) - emax,
                             np.where(np.isinf(amax), 128 - emax, -127))
            else:
                d = (amax / max_elem).astype(np.float32)
                dpos = np.isfinite(d) & (d > 0)
                k = np.where(dpos, ceil_log2(np, np.where(dpos, d, 1)), np.where(np.isinf(d), 127, -127))
            code = np.clip(k, -127, 127) + 127
            decode = np.ldexp(f32(1.0), (code - 127).astype(np.int32)).astype(np.float32)
            encode = np.ldexp(f32(1.0), (127 - code).astype(np.int32)).astype(np.float32)
            scale_codes = np.where(nan, 255, code).astype(np.uint8)
            decode, encode = np.where(nan, f32(np.nan), decode), np.where(nan, f32(np.nan), encode)
        elif rule == "nvfp4":
            ts = tensor_amax / f32(2688.0)
            tensor_scale = ts if np.isfinite(ts) and ts >= f32(2.0 ** -126) else f32(1.0)
            t = ((amax / f32(6.0)) / tensor_scale).astype(np.float32)
            t = np.where(np.isnan(t), t, np.clip(t, f32(2.0 ** -6), f32(448.0))).astype(np.float32)
            s8 = t.astype(ml.float8_e4m3fn)
            scale_codes = s8.view(np.uint8)
            decode = s8.astype(np.float32)
            encode = ((f32(1.0) / tensor_scale) / decode).astype(np.float32)
        elif rule == "tensor":
            a = tensor_amax
            if a > 0 and np.isfinite(a):
                encode_scale = (max_elem / a) / f32(1.0)  # margin 0
                if not np.isfinite(encode_scale):
                    encode_scale = np.finfo(np.float32).max
            encode = np.full(amax.shape, encode_scale, np.float32)
            decode = np.full(amax.shape, f32(1.0) / encode_scale, np.float32)
        elif rule == "block-pow2":
            d = (amax / max_elem).astype(np.float32)
            dpos = np.isfinite(d) & (d > 0)
            k = np.clip(np.where(dpos, ceil_log2(np, np.where(dpos, d, 1)), 0), -126, 127)
            decode = np.where(nan, f32(np.nan), np.ldexp(f32(1.0), k.astype(np.int32))).astype(np.float32)
            encode = np.where(nan, f32(np.nan), np.ldexp(f32(1.0), (-k).astype(np.int32))).astype(np.float32)
        else:  # block-fp32
            d = (amax / max_elem).astype(np.float32)
            decode = encode = np.where((d == 0) | np.isinf(d), f32(1.0), d).astype(np.float32)
            divide = True
        e = spread(np, encode, br, bc, rows, cols)
        scaled = (x / e if divide else x * e).astype(np.float32)
        clipped = np.abs(scaled) > max_elem
        codes = np.clip(scaled, -max_elem, max_elem).astype(dtype).view(np.uint8)
        # NaN: the sign and the all-ones magnitude (e4m3's and e5m2's NaN code, fp6's and fp4's
        # largest value: they have no NaN), halflab's rule where ml_dtypes differs (docs/quantize.md)
        nan_code = (np.signbit(scaled).astype(np.uint8) << ELEMENT_BITS[element]) | ((1 << ELEMENT_BITS[element]) - 1)
        codes = np.where(np.isnan(scaled), nan_code, codes).astype(np.uint8)
        values = codes.view(dtype).astype(np.float32)
        dequantized = ((values * spread(np, decode, br, bc, rows, cols)).astype(np.float32) * tensor_scale).astype(np.float32)
    magnitude = codes & ((1 << ELEMENT_BITS[element]) - 1)
    zero_in = x == 0
    counts = [rows * cols, amax.size, int(zero_in.sum()), int(((~zero_in) & (magnitude == 0)).sum()),
              int(((magnitude != 0) & ((magnitude >> ELEMENT_MAN_BITS[element]) == 0)).sum()), int(clipped.sum()),
              int(np.max(blocks_of(np, clipped.astype(np.float32), br, bc), axis=(1, 3)).sum())]
    return {"codes": codes, "scale_codes": scale_codes, "block_scales": decode, "tensor_scale": tensor_scale,
            "encode_scale": encode_scale, "dequantized": dequantized, "counts": np.array(counts, np.uint64),
            "amax": tensor_amax}


def same_bits(np, a, b):
    """fp32 arrays equal bit for bit, any NaN matching any NaN."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def jobs_for(np, mats):
    """Every rule x element x direction on every matrix."""
    jobs = []
    for name, x in mats:
        for rule, elements, shapes in (
                ("mx-floor", ELEMENTS, [(1, 32), (32, 1)]), ("mx-rceil", ELEMENTS, [(1, 32), (32, 1)]),
                ("nvfp4", ["e2m1"], [(1, 16), (16, 1)]), ("tensor", ["e4m3", "e5m2"], [(0, 0)]),
                ("block-fp32", ["e4m3", "e5m2"], [(1, 128), (128, 1), (128, 128), (8, 8)]),
                ("block-pow2", ["e4m3"], [(1, 128), (128, 1), (128, 128), (8, 8)])):
            for element in elements:
                for br, bc in shapes:
                    jobs.append((name, rule, element, br, bc, x))
    return jobs


def check_ml_dtypes(np, ml, dump):
    mats = matrices(np)
    jobs = jobs_for(np, mats)
    outs = run_dump(np, dump, [j[1:] for j in jobs])
    failures = 0
    for (name, rule, element, br, bc, x), got in zip(jobs, outs):
        want = reference(np, ml, rule, element, br or x.shape[0], bc or x.shape[1], x)
        where = f"{name} {rule} {element} {br}x{bc}"
        problems = []
        code_ok = got["codes"] == want["codes"]
        if not code_ok.all():
            r, c = np.argwhere(~code_ok)[0]
            problems.append(f"code at ({r},{c}) of {x[r, c]!r}: {got['codes'][r, c]:#x}, reference {want['codes'][r, c]:#x}")
        if rule in ("mx-floor", "mx-rceil", "nvfp4") and not (got["scale_codes"] == want["scale_codes"]).all():
            i = np.argwhere(got["scale_codes"] != want["scale_codes"])[0]
            problems.append(f"scale code of block {tuple(i)}: {got['scale_codes'][tuple(i)]}, reference {want['scale_codes'][tuple(i)]}")
        if not same_bits(np, got["block_scales"], want["block_scales"]).all():
            problems.append("block scales differ")
        for key in ("tensor_scale", "encode_scale", "amax"):
            if not same_bits(np, got[key], want[key]):
                problems.append(f"{key} {got[key]!r}, reference {want[key]!r}")
        d_ok = same_bits(np, got["dequantized"], want["dequantized"])
        if not d_ok.all():
            r, c = np.argwhere(~d_ok)[0]
            problems.append(f"dequantized ({r},{c}): {got['dequantized'][r, c]!r}, reference {want['dequantized'][r, c]!r}")
        if not (got["counts"] == want["counts"]).all():
            problems.append(f"counts {got['counts'].tolist()}, reference {want['counts'].tolist()}")
        if problems:
            failures += 1
            print(f"FAIL {where}: " + "; ".join(problems[:3]))
    print(f"{len(jobs) - failures} of {len(jobs)} quantizations equal the ml_dtypes reference bit for bit")
    return failures == 0


# ------------------------------------------------------------------ torchao

def check_torchao(np, dump):
    import logging
    import warnings
    import importlib.metadata
    import importlib.util
    warnings.filterwarnings("ignore")
    logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)  # torchao's enums, registered the old way
    if importlib.util.find_spec("torchao") is None:  # asked before torch's slow import
        skip("torchao is not installed beside the PyTorch peer; scripts/setup.sh --peers installs it")
    version = importlib.metadata.version("torchao")
    if version.split("+")[0] != "0.18.0":
        skip(f"torchao {version} is not the pinned 0.18.0")
    try:
        import torch
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
        from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    except ImportError as e:
        skip(f"torchao does not import on the peer's Python ({e})")
    tdtype = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "e2m3": DTYPE_FP6_E2M3,
              "e3m2": DTYPE_FP6_E3M2, "e2m1": torch.float4_e2m1fn_x2}
    mats = [(n, x) for n, x in matrices(np) if x.shape[1] % 32 == 0 and x.shape[0] % 32 == 0]
    jobs = []
    for name, x in mats:
        for rule in ("mx-floor", "mx-rceil"):
            for element in ELEMENTS:
                jobs += [(name, rule, element, 1, 32, x), (name, rule, element, 32, 1, x)]
        if np.isfinite(x).all():
            jobs += [(name, "nvfp4", "e2m1", 1, 16, x), (name, "nvfp4", "e2m1", 16, 1, x)]
    outs = run_dump(np, dump, [j[1:] for j in jobs])
    failures, compared, left_out = 0, 0, {"NaN": 0, "code 0": 0, "inexact log2": 0}
    for (name, rule, element, br, bc, x), got in zip(jobs, outs):
        columns = br != 1
        xin = np.ascontiguousarray(x.T if columns else x)  # torchao blocks along the last dimension
        codes = got["codes"].T if columns else got["codes"]
        scale_codes = got["scale_codes"].T if columns else got["scale_codes"]
        dequantized = got["dequantized"].T if columns else got["dequantized"]
        t = torch.from_numpy(xin)
        block = 16 if rule == "nvfp4" else 32
        if rule == "nvfp4":
            s8, q = nvfp4_quantize(t, block, per_tensor_amax_to_scale(torch.max(torch.abs(t))))
            their_scales = s8.view(torch.uint8).numpy().reshape(scale_codes.shape)
            their_dequantized = None
        else:
            mode = ScaleCalculationMode.FLOOR if rule == "mx-floor" else ScaleCalculationMode.RCEIL
            s8, q = to_mx(t, tdtype[element], block, mode)
            their_scales = s8.view(torch.uint8).numpy().reshape(scale_codes.shape)
            their_dequantized = to_dtype(q, s8, tdtype[element], block, torch.float32).numpy()
        qb = q.view(torch.uint8).numpy()
        if element == "e2m1":  # two codes a byte, the even element in the low nibble
            their_codes = np.stack([qb & 0xF, qb >> 4], axis=-1).reshape(xin.shape)
        else:
            their_codes = qb.reshape(xin.shape)
        amax = np.max(np.abs(xin.reshape(xin.shape[0], -1, block)), axis=2)
        keep = ~np.isnan(amax)
        left_out["NaN"] += int((~keep).sum())
        if rule != "nvfp4":  # torchao: 2^-126 (FLOOR) or 1 (RCEIL) for code 0
            left_out["code 0"] += int((keep & (scale_codes == 0)).sum())
            keep &= scale_codes != 0
        if rule == "mx-rceil":  # torchao's fp32 log2 on the CPU, against the exact power of two
            d = torch.from_numpy((amax / np.float32(ELEMENT_MAX[element])).astype(np.float32))
            with np.errstate(all="ignore"):
                exact = ceil_log2(np, np.where(d.numpy() > 0, d.numpy(), 1))
            inexact = (torch.ceil(torch.log2(d)).numpy() != exact) & (d.numpy() > 0) & np.isfinite(d.numpy())
            left_out["inexact log2"] += int((keep & inexact).sum())
            keep &= ~inexact
        keep_elements = np.repeat(keep, block, axis=1)
        problems = []
        if not (their_scales == scale_codes)[keep].all():
            i = np.argwhere((their_scales != scale_codes) & keep)[0]
            problems.append(f"scale code of block {tuple(i)}: {scale_codes[tuple(i)]}, torchao {their_scales[tuple(i)]}")
        bad = (their_codes != codes) & keep_elements
        if bad.any():
            r, c = np.argwhere(bad)[0]
            problems.append(f"code at ({r},{c}) of {xin[r, c]!r}: {codes[r, c]:#x}, torchao {their_codes[r, c]:#x}")
        if their_dequantized is not None:
            bad = ~same_bits(np, their_dequantized, dequantized) & keep_elements
            if bad.any():
                r, c = np.argwhere(bad)[0]
                problems.append(f"dequantized ({r},{c}): {dequantized[r, c]!r}, torchao {their_dequantized[r, c]!r}")
        compared += int(keep.sum())
        if problems:
            failures += 1
            print(f"FAIL {name} {rule} {element} {br}x{bc}: " + "; ".join(problems[:3]))
    print(f"{len(jobs) - failures} of {len(jobs)} quantizations equal torchao's ({compared} blocks compared; left out "
          f"as documented differences: " + ", ".join(f"{v} blocks with {k}" for k, v in left_out.items()) + ")")
    return failures == 0


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("ml_dtypes", "torchao"):
        sys.exit("usage: quantize_reference.py ml_dtypes|torchao QUANTIZE_DUMP SOURCE_ROOT")
    mode, dump, root = sys.argv[1:4]
    if "--on-reference" not in sys.argv:
        reexec_with("reference-python.sh" if mode == "ml_dtypes" else "peer-python.sh", mode, dump, root)
    import numpy as np
    if mode == "ml_dtypes":
        import ml_dtypes
        ok = check_ml_dtypes(np, ml_dtypes, dump)
    else:
        ok = check_torchao(np, dump)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
