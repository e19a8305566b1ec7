#!/usr/bin/env python3
"""check_layers.py — fails when a dependency between halflab's layers points up.

A layer is a folder whose meson.build (reached from the root meson.build
through subdir(); a subdir() of a computed name reaches every child folder
with a meson.build) begins its comment with a line

    # layer N: NAME — what the folder owns

Every file below that folder belongs to it, unless a subfolder declares a
layer of its own. A folder inside a layer (one without a layer line of its
own) may declare itself private with a line

    # private to: LAYER, LAYER ... — why

and then only files of the named layers may include its files: the backend
folders kernels/cpu/ and kernels/cuda/ are kernels' own and the tests',
and every other layer reaches a backend through the headers of kernels/.
Two kinds of edge are checked:

  includes  `#include "x"` in a C, CUDA or header file, resolved like the
            compiler does (beside the file, then from the root);
  links     a layer library's dependency object (`NAME_dep =
            declare_dependency(...)` in one layer's meson.build) named in
            another layer's meson.build.

An edge may point only to a layer with a smaller number, or stay inside its
own folder, and an include into a private folder only from a layer it names. Two folders with the same number (the programs) may not use each
other. Each violation is one line, file:line and both layers; exit status 1
when there is any, 0 when none, 2 on bad usage.

Usage: check_layers.py [--root DIR] [--stamp FILE]
"""

import argparse
import os
import re
import sys

LAYER_LINE = re.compile(r"^#\s*layer\s+(\d+):\s*(\S+)")
PRIVATE_LINE = re.compile(r"^#\s*private to:\s*([\w/]+(?:\s*,\s*[\w/]+)*)", re.M)
SUBDIR = re.compile(r"""^\s*subdir\(\s*'([^']+)'\s*\)""", re.M)
SUBDIR_COMPUTED = re.compile(r"""^\s*subdir\(\s*[^'\s)]""", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DEP_DEFINED = re.compile(r"^\s*(\w+_dep)\s*=\s*declare_dependency\b", re.M)
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")


class Layer:
    def __init__(self, folder, rank, name):
        self.folder = folder  # relative to the root, "core/engine"
        self.rank = rank
        self.name = name

    def __str__(self):
        return f"layer {self.rank} {self.name}"


def meson_folders(root, folder=""):
    """Folders reached from root/meson.build through subdir(), in order."""
    path = os.path.join(root, folder, "meson.build")
    if not os.path.isfile(path):
        return []
    found = [folder]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    subs = SUBDIR.findall(text)
    if SUBDIR_COMPUTED.search(text):
        # subdir(name) in a loop (kernels/: one per backend): any child folder
        # with a meson.build may be reached
        here = os.path.join(root, folder)
        subs += sorted(d for d in os.listdir(here)
                       if d not in subs and os.path.isfile(os.path.join(here, d, "meson.build")))
    for sub in subs:
        found += meson_folders(root, os.path.normpath(os.path.join(folder, sub)))
    return found


def read_layers(root):
    layers = {}
    for folder in meson_folders(root):
        if folder == "":
            continue
        with open(os.path.join(root, folder, "meson.build"), encoding="utf-8") as f:
            first = f.readline()
        m = LAYER_LINE.match(first)
        if m:
            layers[folder] = Layer(folder, int(m.group(1)), m.group(2))
    return layers


def read_private(root, layers):
    """Private folders: folder -> the layer names that may include its files."""
    private = {}
    for folder in meson_folders(root):
        if folder == "" or folder in layers:
            continue
        with open(os.path.join(root, folder, "meson.build"), encoding="utf-8") as f:
            m = PRIVATE_LINE.search(f.read())
        if m:
            private[folder] = [name.strip() for name in m.group(1).split(",")]
    return private


def private_folder_of(path, private):
    """The private folder a root-relative path lies in, or None."""
    folder = os.path.dirname(path)
    while folder:
        if folder in private:
            return folder
        folder = os.path.dirname(folder)
    return None


def layer_of(path, layers):
    """The layer of a root-relative path: its deepest layered ancestor."""
    folder = os.path.dirname(path)
    while True:
        if folder in layers:
            return layers[folder]
        if folder == "":
            return None
        folder = os.path.dirname(folder)


def allowed(src, dst):
    return dst.folder == src.folder or dst.rank < src.rank


def source_files(root, layers):
    for folder in layers:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            rel_base = os.path.relpath(base, root)
            # a subfolder with a layer of its own is walked as that layer
            dirs[:] = sorted(dirs)
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    rel = os.path.normpath(os.path.join(rel_base, name))
                    if layer_of(rel, layers).folder == folder:
                        yield rel


def include_violations(root, layers, private):
    for rel in source_files(root, layers):
        src = layer_of(rel, layers)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = None
            for candidate in (os.path.join(os.path.dirname(rel), m.group(1)), m.group(1)):
                candidate = os.path.normpath(candidate)
                if os.path.isfile(os.path.join(root, candidate)):
                    target = candidate
                    break
            if target is None:
                continue  # a system or generated header
            dst = layer_of(target, layers)
            if dst is not None and not allowed(src, dst):
                yield f'{rel}:{number}: includes "{m.group(1)}": {src} ({src.folder}/) may not use {dst} ({dst.folder}/)'
                continue
            hidden = private_folder_of(target, private)
            if hidden is not None and src.name not in private[hidden]:
                yield (f'{rel}:{number}: includes "{m.group(1)}": {src} ({src.folder}/) may not use {hidden}/, '
                       f'private to {", ".join(private[hidden])}')


def link_violations(root, layers):
    owner = {}  # dependency variable -> the layer that declares it
    texts = {}
    for folder, layer in layers.items():
        with open(os.path.join(root, folder, "meson.build"), encoding="utf-8") as f:
            texts[folder] = f.read()
        for var in DEP_DEFINED.findall(texts[folder]):
            owner[var] = layer
    for folder, text in texts.items():
        src = layers[folder]
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            for var in re.findall(r"\b\w+_dep\b", code):
                dst = owner.get(var)
                if dst is not None and not allowed(src, dst):
                    yield f"{folder}/meson.build:{number}: depends on {var}: {src} ({src.folder}/) may not link {dst} ({dst.folder}/)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--stamp", help="write this file when there is no violation (a build step's output)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isfile(os.path.join(root, "meson.build")):
        print(f"check_layers: {root} has no meson.build", file=sys.stderr)
        return 2
    layers = read_layers(root)
    if not layers:
        print(f"check_layers: no '# layer N: NAME' line in any meson.build under {root}", file=sys.stderr)
        return 2
    private = read_private(root, layers)
    violations = list(include_violations(root, layers, private)) + list(link_violations(root, layers))
    for v in violations:
        print(v, file=sys.stderr)
    if violations:
        print(f"check_layers: {len(violations)} dependencies point up or sideways or into a private folder (README, \"Architecture\")",
              file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write(f"{len(layers)} layers, no edge pointing up\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
