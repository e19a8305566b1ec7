#!/usr/bin/env python3
"""hlfiles_batches_fuzz.py — the one reader of halflab-train's --export-batches files, the PyTorch
peer's (bench/peers/hlfiles.py: Batches), given damaged files: a real export, then seeded mutations
(bytes flipped, set or inserted, the file cut, header fields set to edge values, token ids pushed
past the vocabulary), each with its CRC-32 made right again so that the reader's checks past the
checksum are the ones tried. Every file must either read, with every token id inside the model's
vocabulary, or be refused with FileFormatError; any other exception fails the test.

Usage: hlfiles_batches_fuzz.py SOURCE_ROOT HALFLAB_TRAIN [CASES]
It needs numpy: without it, it runs itself under the peer's Python (scripts/peer-python.sh), and
skips (exit 77) where that is not installed, or fails where HALFLAB_REQUIRE_PEER=1.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile
import traceback
import zlib

EDGE_WORDS = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


def peer_python(root):
    r = subprocess.run([os.path.join(root, "scripts", "peer-python.sh")], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def with_crc(body):
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)


def mutate(rng, data):
    body = bytearray(data[:-4])
    kind = rng.randrange(6)
    if kind == 0:  # flip bits
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(body))
            body[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # a header word set to an edge value
        at = 8 + 4 * rng.randrange(7)
        body[at:at + 4] = struct.pack("<I", rng.choice(EDGE_WORDS + [rng.randrange(1 << 32)]))
    elif kind == 2:  # cut
        body = body[:rng.randrange(len(body))]
    elif kind == 3:  # bytes inserted
        i = rng.randrange(len(body) + 1)
        body[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif kind == 4:  # a token id past the vocabulary, or negative
        i = 36 + 4 * rng.randrange((len(body) - 36) // 4)
        body[i:i + 4] = struct.pack("<i", rng.choice([-1, -(1 << 31), 256, 1 << 30, (1 << 31) - 1]))
    else:  # a run of bytes overwritten
        i = rng.randrange(len(body))
        body[i:i + 16] = bytes(rng.randrange(256) for _ in range(16))
    return with_crc(bytes(body))


def main(root, train, cases):
    try:
        import numpy  # noqa: F401
    except ImportError:
        python = peer_python(root)
        if python and os.path.realpath(python) != os.path.realpath(sys.executable):
            os.execv(python, [python] + sys.argv)
        print("hlfiles_batches_fuzz: the peer's Python (numpy) is not installed (scripts/setup.sh --peers)")
        return 1 if os.environ.get("HALFLAB_REQUIRE_PEER") == "1" else 77
    sys.path.insert(0, os.path.join(root, "bench", "peers"))
    import hlfiles

    with tempfile.TemporaryDirectory() as d:
        export = os.path.join(d, "b.bin")
        subprocess.run([train, "--device", "cpu", "--batch", "4", "--eval-samples", "8", "--steps", "0", "--export-steps", "2",
                        "--export-batches", export, "--out", os.path.join(d, "out")],
                       check=True, stdout=subprocess.DEVNULL)
        good = open(export, "rb").read()
        whole = hlfiles.Batches(export)
        if not whole.train:
            print("hlfiles_batches_fuzz: the export holds no micro-batch")
            return 1
        rng = random.Random(int(os.environ.get("HALFLAB_FUZZ_SEED", "1")))
        path = os.path.join(d, "m.bin")
        read = refused = 0
        for case in range(cases):
            data = mutate(rng, good)
            open(path, "wb").write(data)
            try:
                b = hlfiles.Batches(path)
            except hlfiles.FileFormatError:
                refused += 1
                continue
            except Exception:  # anything else is the reader failing, not refusing
                print("hlfiles_batches_fuzz: case %d: the reader raised instead of refusing:" % case)
                traceback.print_exc(file=sys.stdout)
                print("the input, hex: %s" % data.hex())
                return 1
            ids = [b.eval_inputs, b.eval_targets] + [a for idx, tgt, _ in b.train for a in (idx, tgt)]
            if any(a.size and (a.min() < 0 or a.max() >= b.model_vocab) for a in ids):
                print("hlfiles_batches_fuzz: case %d: read, with a token id outside the vocabulary" % case)
                return 1
            read += 1
    print("hlfiles_batches_fuzz: %d damaged files: %d refused, %d read whole, 0 failures" % (cases, refused, read))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3000))
