"""hlfiles.py — halflab's file formats for the PyTorch peer, in plain Python.

  read_weights / write_weights   core/models/nn.h's weight file ("HLWTS001"; docs/models.md)
  read_batches                   halflab-train --export-batches ("HLBAT001"; docs/train.md)
  Record                         gpt_peer --record: a run's steps in one weight file (docs/peers.md)
  Meta                           the "# " metadata lines every halflab CSV starts with (cli/csv.h)
  LogCSV, write_table            a steps log and a table in halflab-train's layout, each row given
                                 by column name (cells_by_name: every column exactly once)
  Column, Schema                 a CSV's column table, as cli/schema.h's: header, "# units:" line,
                                 every row (each column set once) and the docs' Markdown section

numpy only (no torch), so the files can be read anywhere. Every reader checks
the magic, the sizes and zlib's CRC-32 before it returns anything: a
truncated or corrupt file is a FileFormatError naming the file and the problem.
"""
import csv
import datetime
import os
import platform
import re
import struct
import subprocess
import sys
import zlib

try:
    import numpy as np
except ImportError:  # the CSV helpers need no numpy; the weight and batch files do
    np = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSV_SCHEMA = 2


class FileFormatError(Exception):
    pass


def _checked_bytes(path, magic):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < len(magic) + 4 or data[: len(magic)] != magic:
        raise FileFormatError("%s: not a %s file (wrong magic or too short)" % (path, magic.decode()))
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) & 0xFFFFFFFF != crc:
        raise FileFormatError("%s: CRC-32 mismatch (truncated or corrupt)" % path)
    return data


# ---------------------------------------------------------------- weights --

def read_weights(path):
    """{name: float32 ndarray} in file order (dict keeps it)."""
    data = _checked_bytes(path, b"HLWTS001")
    end = len(data) - 4
    at = 8

    def take(n):
        nonlocal at
        if at + n > end:
            raise FileFormatError("%s: truncated at byte %d" % (path, at))
        b = data[at : at + n]
        at += n
        return b

    (count,) = struct.unpack("<I", take(4))
    out = {}
    for _ in range(count):
        (name_len,) = struct.unpack("<I", take(4))
        name = take(name_len).decode("utf-8")
        (ndim,) = struct.unpack("<I", take(4))
        dims = struct.unpack("<%dq" % ndim, take(8 * ndim))
        numel = int(np.prod(dims, dtype=np.int64)) if ndim else 1
        if name in out:
            raise FileFormatError("%s: %s appears twice" % (path, name))
        out[name] = np.frombuffer(take(4 * numel), dtype="<f4").reshape(dims).copy()
    if at != end:
        raise FileFormatError("%s: %d unexpected bytes after the last tensor" % (path, end - at))
    return out


def write_weights(path, tensors):
    """tensors: iterable of (name, ndarray); written as f32, PATH.tmp then renamed."""
    parts = [b"HLWTS001"]
    items = list(tensors.items() if isinstance(tensors, dict) else tensors)
    parts.append(struct.pack("<I", len(items)))
    for name, a in items:
        a = np.ascontiguousarray(a, dtype="<f4")
        nb = name.encode("utf-8")
        parts.append(struct.pack("<I", len(nb)) + nb)
        parts.append(struct.pack("<I", a.ndim) + struct.pack("<%dq" % a.ndim, *a.shape))
        parts.append(a.tobytes())
    body = b"".join(parts)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
        f.write(struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF))
    os.replace(tmp, path)


class Record:
    """A run's steps in one weight file (gpt_peer --record; the frozen parity fixture, docs/peers.md):
    "loss", "grad_norm" and "scale" [steps], then every parameter's unscaled gradient of step s as
    "step<s>/<parameter name>", steps in order, parameters in the model's order. All f32: the loss,
    the norm and the gradients are f32 values, the scale a power of two."""

    def __init__(self):
        self.loss, self.grad_norm, self.scale, self.gradients = [], [], [], []

    def append_gradients(self, named):
        self.gradients.append(named)

    def append_step(self, loss, grad_norm, scale):
        self.loss.append(loss)
        self.grad_norm.append(grad_norm)
        self.scale.append(scale)

    def write(self, path):
        if len(self.gradients) != len(self.loss):
            raise ValueError("record: %d steps of gradients, %d of losses" % (len(self.gradients), len(self.loss)))
        tensors = [(key, np.array(getattr(self, key), dtype=np.float32)) for key in ("loss", "grad_norm", "scale")]
        for s, named in enumerate(self.gradients, 1):
            tensors += [("step%d/%s" % (s, n), g) for n, g in named]
        write_weights(path, tensors)


# ---------------------------------------------------------------- batches --

class Batches:
    """The token batches of halflab-train --export-batches.

    train[i] = (inputs, targets, scored) of micro-batch i (step i // accum + 1),
    each [rows, T] (int64, int64, bool); eval_* the held-out set [eval_rows, T]."""

    def __init__(self, path):
        data = _checked_bytes(path, b"HLBAT001")
        if len(data) < 8 + 28 + 4:
            raise FileFormatError("%s: %d bytes, shorter than the header" % (path, len(data)))
        (self.rows, self.T, self.vocab, self.model_vocab, self.micro_batches, self.accum,
         self.eval_rows) = struct.unpack_from("<7I", data, 8)
        n = self.rows * self.T
        need = 8 + 28 + self.micro_batches * 9 * n + self.eval_rows * self.T * 9 + 4
        if len(data) != need:
            raise FileFormatError("%s: %d bytes, the header implies %d" % (path, len(data), need))
        if self.accum < 1 or self.micro_batches % self.accum:
            raise FileFormatError("%s: %d micro-batches is not a multiple of accum %d" % (path, self.micro_batches, self.accum))
        at = 36
        self.train = []
        for _ in range(self.micro_batches):
            idx = np.frombuffer(data, "<i4", n, at).reshape(self.rows, self.T).astype(np.int64)
            at += 4 * n
            tgt = np.frombuffer(data, "<i4", n, at).reshape(self.rows, self.T).astype(np.int64)
            at += 4 * n
            sc = np.frombuffer(data, "u1", n, at).reshape(self.rows, self.T).astype(bool)
            at += n
            self.train.append((idx, tgt, sc))
        e = self.eval_rows * self.T
        self.eval_inputs = np.frombuffer(data, "<i4", e, at).reshape(self.eval_rows, self.T).astype(np.int64)
        at += 4 * e
        self.eval_targets = np.frombuffer(data, "<i4", e, at).reshape(self.eval_rows, self.T).astype(np.int64)
        at += 4 * e
        self.eval_scored = np.frombuffer(data, "u1", e, at).reshape(self.eval_rows, self.T).astype(bool)
        # every token id indexes the model's embedding: one outside it is a damaged file, not a batch
        checked = [("eval inputs", self.eval_inputs), ("eval targets", self.eval_targets)]
        for i, (idx, tgt, _) in enumerate(self.train):
            checked += [("micro-batch %d inputs" % (i + 1), idx), ("micro-batch %d targets" % (i + 1), tgt)]
        for what, a in checked:
            if a.size and (a.min() < 0 or a.max() >= self.model_vocab):
                raise FileFormatError("%s: %s outside the vocabulary %d" % (path, what, self.model_vocab))

    @property
    def steps(self):
        return self.micro_batches // self.accum

    def micro(self, step, m):
        """Micro-batch m of optimizer step `step` (from 1)."""
        return self.train[(step - 1) * self.accum + m]


# ------------------------------------------------------------ CSV metadata --

def halflab_version():
    """(version, git describe) as halflab's own programs print them."""
    version = "unknown"
    try:
        with open(os.path.join(ROOT, "meson.build")) as f:
            m = re.search(r"version:\s*'([^']+)'", f.read())
            if m:
                version = m.group(1)
    except OSError:
        pass
    describe = "unknown"
    try:
        r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True,
                           timeout=10)
        if r.returncode == 0 and r.stdout.strip():
            describe = r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return version, describe


def cpu_model():
    """The CPU's name as halflab's device line gives it: /proc/cpuinfo's model
    name, with the family and model where cpuinfo has them ("AMD EPYC
    (family 26 model 2)"): a VM's name alone does not tell generations apart."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, sep, value = line.partition(":")
                key = key.strip()
                if not sep:
                    break  # the first processor's block ends at a blank line
                fields.setdefault(key, value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += " (family %s model %s)" % (fields["cpu family"], fields["model"])
    return name


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


class Meta:
    """The "# key: value" lines of a halflab CSV: '# halflab <version> (<describe>)',
    schema, command, device, host, date, then extra keys in the order set."""

    def __init__(self, device, argv=None):
        self.version, self.describe = halflab_version()
        self.command = " ".join([os.path.relpath(sys.argv[0], os.getcwd()) if argv is None else argv[0]] +
                                list(sys.argv[1:] if argv is None else argv[1:]))
        self.device = device
        u = platform.uname()
        self.host = "%s, %s %s %s" % (u.node, u.system, u.release, u.machine)
        self.date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.extra = {}

    def set(self, key, value):
        self.extra[key] = str(value)

    def text(self):
        """Each value one visible line (one_line): a command line or a host name never splits a line."""
        lines = ["# halflab %s" % one_line("%s (%s)" % (self.version, self.describe)), "# schema: %d" % CSV_SCHEMA,
                 "# command: %s" % one_line(self.command), "# device: %s" % one_line(self.device),
                 "# host: %s" % one_line(self.host), "# date: %s" % self.date]
        lines += ["# %s: %s" % (k, one_line(v)) for k, v in self.extra.items()]
        return "\n".join(lines) + "\n"


def one_line(text):
    """text as one visible line of valid UTF-8, as halflab writes it (cli/csv_text.h): LF, CR and TAB
    as \\n, \\r and \\t; other control characters, the byte order mark and the bytes of invalid UTF-8
    (surrogate escapes, as Python decodes them from argv) as \\xHH per UTF-8 byte."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02X" % (o - 0xDC00))
        elif o < 0x20 or 0x7F <= o <= 0x9F or o == 0xFEFF or 0xD800 <= o <= 0xDFFF:
            out.append("".join("\\x%02X" % b for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


def csv_cell(text):
    """A text cell: one line (one_line), quoted as RFC 4180 says when it holds a comma or a quote."""
    text = one_line(text)
    return '"%s"' % text.replace('"', '""') if ("," in text or '"' in text) else text


def cell(v, fmt="%.9g"):
    """A CSV cell: empty for None / NaN (not measured), like halflab's writer."""
    if v is None:
        return ""
    if isinstance(v, float) and v != v:
        return ""
    if isinstance(v, str):
        return v
    return fmt % v


def measured(v):
    """A measured value that may be inf / NaN itself (a diverged loss)."""
    if v != v:
        return "nan"
    return "%.9g" % v


class LogCSV:
    """A per-step log: metadata and header, then one flushed line per row (cli/csv.h LOG mode);
    each row a {column: cell} (cells_by_name)."""

    def __init__(self, path, meta, header):
        self.f = open(path, "w")
        self.f.write(meta.text())
        self.f.write(header + "\n")
        self.header = header
        self.f.flush()

    def row(self, values):
        self.f.write(",".join(cells_by_name(self.f.name, self.header, values)) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


def write_table(path, meta, header, rows):
    """A table: written to PATH.tmp, renamed when complete (cli/csv.h TABLE mode); each row
    a {column: cell} (cells_by_name)."""
    lines = [",".join(cells_by_name(path, header, r)) for r in rows]  # checked before the file is made
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(meta.text())
        f.write(header + "\n")
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def cells_by_name(path, header, values):
    """The cells of one row of a file copied from halflab-train's layout, in its header's
    order, from {column: cell text} (tests/peers/peer_headers.py checks the headers against
    halflab-train's column tables). Every column is given exactly once: a missing or extra
    name stops the run instead of shifting columns; a cell is written as csv_cell writes it."""
    names = header.split(",")
    if len(set(names)) != len(names):
        raise ValueError("%s: the header names a column twice" % path)
    if set(values) != set(names):
        raise ValueError("%s: the row lacks %s and adds %s" % (path, sorted(set(names) - set(values)) or "nothing",
                                                              sorted(set(values) - set(names)) or "nothing"))
    cells = [values[n] for n in names]
    for n, c in zip(names, cells):
        if not isinstance(c, str):
            raise ValueError("%s: column %s given %r (cells are text)" % (path, n, c))
    return [csv_cell(c) for c in cells]


INT, REAL, TEXT = "integer", "real", "text"


class Column:
    """One column: name (units in it), unit ("1": a plain number; "": text), kind, the
    printf format of a real, what it means, and the function that computes it."""

    def __init__(self, name, unit, kind, fmt, meaning, filled_by):
        assert re.match(r"^[a-z0-9_]+$", name), name
        assert (kind == TEXT) == (unit == ""), name
        self.name, self.unit, self.kind, self.fmt, self.meaning, self.filled_by = name, unit, kind, fmt, meaning, filled_by


class Schema:
    """A CSV described once (cli/schema.h): the same table writes the header, the
    "# units:" line, every row, and the file's section of docs/columns.md."""

    def __init__(self, file, program, written_by, about, columns):
        names = [c.name for c in columns]
        assert len(set(names)) == len(names), file
        self.file, self.program, self.written_by, self.about, self.columns = file, program, written_by, about, columns

    def header(self):
        return ",".join(c.name for c in self.columns)

    def units(self):
        return ",".join("%s=%s" % (c.name, c.unit) for c in self.columns if c.unit)

    def row(self, values):
        """The cells of one row from {column: value}: every column exactly once. None: an
        empty cell (missing); integers exactly; reals in the column's format, NaN as nan; text
        as csv_cell writes it; a real given as text (a cell read from another CSV) is read and written again."""
        names = [c.name for c in self.columns]
        if set(values) != set(names):
            raise ValueError("%s: the row %s %s" % (self.file, "lacks" if set(names) - set(values) else "adds",
                                                   sorted(set(names) ^ set(values))))
        cells = []
        for c in self.columns:
            v = values[c.name]
            if v is None or v == "":
                cells.append("")
            elif c.kind == INT:
                if isinstance(v, float) and v != int(v):
                    raise ValueError("%s: column %s is an integer, given %r" % (self.file, c.name, v))
                cells.append("%d" % int(v))
            elif c.kind == REAL:
                x = float(v)
                cells.append("nan" if x != x else "inf" if x == float("inf") else "-inf" if x == -float("inf")
                             else c.fmt % x)
            else:
                cells.append(csv_cell(str(v)))
        return cells

    def write(self, path, meta, rows):
        """PATH as a table (written to PATH.tmp, renamed when complete): the metadata, the
        "# units:" line, the header and each row ({column: value})."""
        cells = [self.row(r) for r in rows]
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(meta.text())
            f.write("# units: %s\n" % self.units())
            f.write(self.header() + "\n")
            for r in cells:
                f.write(",".join(r) + "\n")
        os.replace(tmp, path)

    def markdown(self):
        """The file's section of docs/columns.md, as cli/schema.c's hl_schema_markdown."""
        def md(text):
            return text.replace("|", "\\|")
        out = ["## %s" % self.file, "", "Written by `%s` in `%s`. %s" % (self.program, self.written_by, md(self.about)),
               "", "| column | unit | type | meaning | computed in |", "|---|---|---|---|---|"]
        for c in self.columns:
            kind = "real `%s`" % c.fmt if c.kind == REAL else c.kind
            out.append("| `%s` | %s | %s | %s | `%s` |" % (c.name, c.unit or "-", kind, md(c.meaning), c.filled_by))
        return "\n".join(out) + "\n\n"


def read_csv(path):
    """(meta lines, header list, rows as dicts) of a halflab CSV."""
    meta, header, rows = [], None, []
    # as another system may leave it: a byte order mark (utf-8-sig), CRLF, quoted cells (csv)
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = f.read().split("\n")  # not splitlines: U+2028 and the like are text in a cell
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    at = 0
    while at < len(lines) and (lines[at].startswith("#") or not lines[at].strip()):
        if lines[at].strip():
            meta.append(lines[at].rstrip("\r\n"))
        at += 1
    for cells in csv.reader(lines[at:], strict=True):
        if header is None:
            header = cells
        elif cells:
            rows.append(dict(zip(header, cells)))
    return meta, header, rows
