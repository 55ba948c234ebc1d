#!/usr/bin/env bash
# Packs wheels into site-packages for the lent H200 (Python 3.12, x86_64) as xz'd parts that fit one device call
# each: the install is done here (pip --target with the H200's platform tags), so the device only unpacks (lease 9:
# 260 MB of parts, 2 s to unpack there, against one `pip install` per call of raw wheels).
# Usage: pack_site.sh WHEEL_DIR OUT_DIR [PART_BYTES]   (PART_BYTES default 54000000: a call carries at most 64 MiB
#        with the working tree, about 6 MB)
# OUT_DIR gets p0, p1, ... each holding site.tar.xz.NN parts; a last part smaller than 4 MB joins the one before it.
# On the device, after copying every p*/ part to one folder X:
#   mkdir -p /tmp/site && cat X/site.tar.xz.* | xz -dc -T0 | tar -C /tmp/site -xf - && export PYTHONPATH=/tmp/site
set -eu
wheels=${1:?usage: pack_site.sh WHEEL_DIR OUT_DIR [PART_BYTES]}
out=${2:?usage: pack_site.sh WHEEL_DIR OUT_DIR [PART_BYTES]}
part_bytes=${3:-54000000}
python=${PYTHON:-python3}
case $part_bytes in '' | *[!0-9]*) echo "pack_site: PART_BYTES $part_bytes: give a number of bytes" >&2; exit 2 ;; esac
compgen -G "$wheels/*.whl" > /dev/null || { echo "pack_site: no *.whl in $wheels: give the folder of wheels" >&2; exit 2; }
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "pack_site: $out is not empty: give a new folder" >&2
  exit 2
fi
site=$(mktemp -d "${TMPDIR:-/tmp}/pack-site.XXXXXX")
trap 'rm -rf "$site"' EXIT
"$python" -m pip install -q --no-index --no-deps --target "$site/site" --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_34_x86_64 --platform manylinux_2_31_x86_64 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any "$wheels"/*.whl
tar -C "$site/site" -cf - . | xz -T0 -6 | split -b "$part_bytes" -d - "$site/site.tar.xz."
parts=("$site"/site.tar.xz.*)
n=${#parts[@]}
if [ "$n" -gt 10 ]; then  # p0..p9 keep the parts in order wherever a glob lists them
  echo "pack_site: $n parts of $part_bytes bytes: give a PART_BYTES that makes at most 10" >&2
  exit 2
fi
mkdir -p "$out"
for i in "${!parts[@]}"; do
  dest=$out/p$i
  # a small tail travels with the part before it: one device call less
  if [ "$i" -gt 0 ] && [ "$i" -eq $((n - 1)) ] && [ "$(stat -c %s "${parts[$i]}")" -lt 4000000 ]; then
    dest=$out/p$((i - 1))
  fi
  mkdir -p "$dest"
  mv "${parts[$i]}" "$dest/"
done
cat "$out"/p*/site.tar.xz.* | xz -t
du -sb "$out"/p*
