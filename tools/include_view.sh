#!/bin/sh
# tools/include_view.sh VIEW SRC FOLDER... — (re)creates VIEW as a folder of
# symbolic links to SRC/FOLDER for each FOLDER (e.g. "core/base"), and
# nothing else. A layer's sources are compiled with only its view on the
# include path, so `#include "core/engine/tensor.h"` from a layer below the
# engine finds no file and fails to compile. Run by meson at configure time.
set -eu
view=$1 src=$2
shift 2
rm -rf "$view"
mkdir -p "$view"
for folder in "$@"; do
  mkdir -p "$view/$(dirname "$folder")"
  ln -s "$src/$folder" "$view/$folder"
done
