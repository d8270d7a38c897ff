#!/bin/sh
# Builds DIR/deb/sid-migraphx-root: the llama root of fetch-debian-llama.sh (DIR/deb/sid-llama-root, hard-linked, never
# modified) plus Debian unstable's MIGraphX 7.1.1 — its drivers (migraphx: migraphx-driver, migraphx-hiprtc-driver), its
# libraries (migraphx-tools: libmigraphx*.so.2014000, whose libmigraphx.so.2014000.0 has a 21,305,915-byte dynamic
# string table, DT_STRSZ) and its C API (libmigraphx-c3) — and every further unstable package their DT_NEEDED closure
# needs inside the tree (found with `gfxscan check --exe … --root` and checked against the tree's own glibc loader:
# `chroot ROOT /lib64/ld-linux-x86-64.so.2 --list /usr/bin/migraphx-driver` finds every library). Nothing is installed
# into the host system: packages are downloaded and unpacked with dpkg-deb -x.
#
# Usage: sh fetch-debian-migraphx.sh [DIR]     (default: ~/gfxscan-corpus; run fetch-debian-llama.sh DIR first)
# Result: DIR/debs-migraphx/*.deb                 the packages as downloaded
#         DIR/deb/sid-migraphx/<package>_<version>/ one unpacked package per folder (':' and '~' in versions -> '_')
#         DIR/deb/sid-migraphx-root/...           sid-llama-root + these packages merged (hard links)
# Running it again is harmless: present .debs are not fetched again, present folders not unpacked again.
set -eu
DIR=${1:-$HOME/gfxscan-corpus}
[ -d "$DIR" ] && DIR=$(cd "$DIR" && pwd -P)
DEBS=$DIR/debs-migraphx; UNP=$DIR/deb/sid-migraphx; BASE=$DIR/deb/sid-llama-root; ROOT=$DIR/deb/sid-migraphx-root

[ -e "$BASE/usr/bin/llama-cli" ] || { echo "no $BASE: run scripts/fetch-debian-llama.sh $DIR first" >&2; exit 1; }
[ -f /etc/apt/sources.list.d/gfxscan-sid.sources ] || {
  echo "no unstable apt source: run ../shared/corpus/fetch-debian-rocm64.sh $DIR first (it adds one, pinned low)" >&2
  exit 1; }

# Exact unstable versions. Unstable moves: a pinned version it no longer serves makes apt-get fail here; then take the
# version `apt-cache policy PKG` offers and check the closure again. Beyond sid-llama-root the closure needs:
#   libsqlite3-0 (libmigraphx), libprotobuf32t64 (libmigraphx_onnx, _tf), libhiprtc6 (migraphx-hiprtc-driver),
#   libbz2-1.0, libboost-filesystem1.90.0, libboost-atomic1.90.0 (libMIOpen.so.1, which libmigraphx_gpu needs).
PKGS="migraphx=7.1.1-8 migraphx-tools=7.1.1-8 libmigraphx-c3=7.1.1-8 libsqlite3-0=3.53.4-2 libprotobuf32t64=3.21.12-17
  libhiprtc6=6.4.3-5 libbz2-1.0=1.0.8-6+b2 libboost-filesystem1.90.0=1.90.0-6.1+b1 libboost-atomic1.90.0=1.90.0-6.1+b1"

mkdir -p "$DEBS" "$UNP"
missing=""
for p in $PKGS; do
  name=${p%%=*}; version=${p#*=}
  ls "$DEBS/${name}_"*.deb >/dev/null 2>&1 || missing="$missing $name=$version"
done
# shellcheck disable=SC2086
[ -z "$missing" ] || (cd "$DEBS" && apt-get download $missing)

for f in "$DEBS"/*.deb; do
  p=$(dpkg-deb -f "$f" Package); v=$(dpkg-deb -f "$f" Version | tr ':~' '__')
  d="$UNP/${p}_${v}"
  [ -d "$d" ] || { mkdir -p "$d" && dpkg-deb -x "$f" "$d"; }
done

if [ ! -d "$ROOT" ]; then
  cp -al "$BASE" "$ROOT"
fi
for d in "$UNP"/*/; do
  # Merged /usr: the llama root's lib -> usr/lib links stay links.
  (cd "$d" && find . -mindepth 1 \( -type f -o -type l \) -print) | while IFS= read -r f; do
    t="$ROOT/${f#./}"
    [ -e "$t" ] || [ -L "$t" ] && continue
    mkdir -p "$(dirname "$t")"
    cp -al "$d/$f" "$t" 2>/dev/null || cp -a "$d/$f" "$t"
  done
done
echo "MIGraphX root ready under $ROOT ($(ls "$ROOT/usr/bin" | grep -c '^migraphx') MIGraphX programs)"
