#!/bin/sh
# Fetches Debian's real amdgpu drivers and firmware for the driver-and-firmware checks: the
# unsigned kernel images of bookworm (Linux 6.1, plain amdgpu.ko) and trixie (Linux 6.12,
# amdgpu.ko.xz), and firmware-amd-graphics 20230210 (bookworm), 20250410 (trixie) and
# 20260916 (unstable). Download and unpack only (dpkg-deb -x): nothing is installed.
#
# Usage: sh scripts/fetch-debian-kernels.sh [DIR]     (default: ~/gfxscan-corpus)
# Result: DIR/debs-kernel/*.deb                 the packages as downloaded
#         DIR/kernel/linux-<release>/             each kernel package unpacked (its amdgpu module,
#                                                 its /boot config; the other modules deleted)
#         DIR/kernel/firmware-<version>/          each firmware package unpacked
#         DIR/kernel/<kernel>+<firmware>-root/    one root per pairing: the kernel's module and
#                                                 config and the firmware tree (hard links)
#         DIR/kernel/truth/<release>.firmware     `modinfo -F firmware` of each amdgpu module, by
#                                                 Debian's own kmod (unpacked from its package):
#                                                 truth independent of gfxscan
# Running it again is harmless: present .debs are not fetched again, present folders kept.
set -eu
DIR=${1:-$HOME/gfxscan-corpus}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
DEBS=$DIR/debs-kernel; K=$DIR/kernel
mkdir -p "$DEBS" "$K/truth"

# Exact versions. bookworm's kernel comes from bookworm-security, trixie's and the firmware from
# the suites the apt sources name; bookworm's firmware (non-free-firmware, a component the
# sources may not list) from the archive's pool by URL.
KERNELS="linux-image-6.1.0-57-amd64-unsigned=6.1.192-3 linux-image-6.12.117+deb13-amd64-unsigned=6.12.117-1"
FIRMWARE="firmware-amd-graphics=20250410-2 firmware-amd-graphics=20260916-1"
POOL=http://deb.debian.org/debian/pool/non-free-firmware/f/firmware-nonfree
BOOKWORM_FW=firmware-amd-graphics_20230210-5_all.deb

cd "$DEBS"
for p in $KERNELS $FIRMWARE; do
  name=${p%%=*}; version=${p#*=}
  ls "${name}_${version}_"*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null
done
[ -f "$BOOKWORM_FW" ] || python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
  "$POOL/$BOOKWORM_FW" "$BOOKWORM_FW.part" && { [ -f "$BOOKWORM_FW" ] || mv "$BOOKWORM_FW.part" "$BOOKWORM_FW"; }
# Debian's modinfo (kmod), unpacked, for the truth.
ls kmod_*.deb >/dev/null 2>&1 || apt-get download kmod >/dev/null
[ -x "$DEBS/kmod/bin/kmod" ] || dpkg-deb -x kmod_*.deb "$DEBS/kmod"
# kmod is one program answering to the name it is called by.
ln -sf kmod "$DEBS/kmod/bin/modinfo"

for f in linux-image-*.deb; do
  release=$(dpkg-deb -f "$f" Package | sed 's/^linux-image-//; s/-unsigned$//')
  d="$K/linux-$release"
  if [ ! -d "$d" ]; then
    mkdir -p "$d.part" && dpkg-deb -x "$f" "$d.part"
    # Keep the amdgpu module and the kernel's config; the rest is 400 MB of other drivers.
    find "$d.part/lib/modules" "$d.part/usr/lib/modules" -type f ! -name 'amdgpu.ko*' ! -name 'modules.*' -delete 2>/dev/null || true
    find "$d.part" -depth -type d -empty -delete
    mv "$d.part" "$d"
  fi
  module=$(find "$d" -name 'amdgpu.ko*' -type f | head -n 1)
  [ -s "$K/truth/$release.firmware" ] || "$DEBS/kmod/bin/modinfo" -F firmware "$module" > "$K/truth/$release.firmware"
done
for f in firmware-amd-graphics_*.deb; do
  version=$(dpkg-deb -f "$f" Version | sed 's/-[^-]*$//')
  d="$K/firmware-$version"
  [ -d "$d" ] || { mkdir -p "$d.part" && dpkg-deb -x "$f" "$d.part" && mv "$d.part" "$d"; }
done
# Roots made by an earlier version of this script, which took its own roots for kernels.
find "$K" -mindepth 1 -maxdepth 1 -name '*-root+*' -exec rm -rf {} +
for kernel in "$K"/linux-*/; do
  case $kernel in *-root/) continue ;; esac   # a root made by an earlier run, not a kernel
  for fw in "$K"/firmware-*/; do
    root="$K/$(basename "$kernel")+$(basename "$fw")-root"
    [ -d "$root" ] && continue
    mkdir -p "$root.part"
    cp -al "$kernel/." "$root.part/"
    cp -al "$fw/." "$root.part/"
    mv "$root.part" "$root"
  done
done
wc -l "$K"/truth/*.firmware
find "$K" -mindepth 1 -maxdepth 1 -name '*-root' | sort
