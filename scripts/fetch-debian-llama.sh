#!/bin/sh
# Builds DIR/deb/sid-llama-root: the Debian unstable ROCm 6.4 tree of fetch-debian-rocm64.sh (DIR/deb/sid-root,
# hard-linked, never modified) plus Debian unstable's own llama.cpp 0.7.0 + ggml 0.27.0 with its HIP backend, plus
# every further unstable package needed so that each DT_NEEDED of each ELF file of the llama packages, and of
# everything they reach (libggml-hip.so -> libhipblas/librocblas/libamdhip64 -> libhsa-runtime64 -> libdrm/libelf/
# libnuma ..., down to libc6), resolves inside the tree. Also the code-object manager libamd_comgr.so.3, which
# libamdhip64.so.6 loads with dlopen() at run time (not a DT_NEEDED), and its own DT_NEEDED closure (libLLVM.so.21.1
# -> libffi/libedit/libz3/libxml2 ...). With lib -> usr/lib, lib64 -> usr/lib64, bin -> usr/bin,
# sbin -> usr/sbin (a merged-/usr system), etc/ld.so.conf (+ .d) as libc-bin/libc6 ship them, and etc/ld.so.cache
# made with the host's ldconfig -r (without touching any link), so that `chroot ROOT /lib64/ld-linux-x86-64.so.2
# --list /usr/bin/llama-cli` runs the tree's own loader. Nothing is installed into the host system: packages are
# downloaded and unpacked with dpkg-deb -x.
#
# Usage: sh fetch-debian-llama.sh [DIR]        (default: ~/gfxscan-corpus; run fetch-debian-rocm64.sh DIR first)
# Result: DIR/debs-llama/*.deb                    the packages as downloaded
#         DIR/deb/sid-llama/<package>_<version>/  one unpacked package per folder (':' and '~' in versions -> '_')
#         DIR/deb/sid-llama-root/...              sid-root + all of these packages merged (hard links)
#         DIR/deb/sid-llama/OWNED.txt             package<TAB>path for every file/symlink these packages own there
# Refuses (exit 1, nothing merged) if a file of these packages would replace a different file already in the tree
# (same inode, identical symlink target or identical content count as the same file).
# Running it again is harmless: present .debs are not fetched again, present folders not unpacked again, present
# links left as they are. DIR/deb/sid-root is only read.
set -eu
DIR=${1:-$HOME/gfxscan-corpus}
[ -d "$DIR" ] && DIR=$(cd "$DIR" && pwd -P)
DEBS=$DIR/debs-llama; UNP=$DIR/deb/sid-llama; BASE=$DIR/deb/sid-root; ROOT=$DIR/deb/sid-llama-root
TAB=$(printf '\t')

# The ROCm 6.4 tree must exist first (fetch-debian-rocm64.sh DIR).
for f in libamdhip64.so.6 librocblas.so.4 libhsa-runtime64.so.1; do
  [ -e "$BASE/usr/lib/x86_64-linux-gnu/$f" ] || {
    echo "no $BASE/usr/lib/x86_64-linux-gnu/$f: run fetch-debian-rocm64.sh $DIR first" >&2; exit 1; }
done

# The apt source fetch-debian-rocm64.sh adds: unstable, pinned low so that nothing from it is ever installed.
[ -f /etc/apt/sources.list.d/gfxscan-sid.sources ] || {
  echo "no unstable apt source: run ../shared/corpus/fetch-debian-rocm64.sh $DIR first (it adds one, pinned low)" >&2
  exit 1; }

# Exact unstable versions. Unstable moves: a pinned version it no longer serves makes apt-get fail here; then take
# the version `apt-cache policy PKG` offers and check the closure again.
LLAMA="llama.cpp-tools=1:0.7.0+dfsg-2 libllama0=1:0.7.0+dfsg-2 libggml0=0.27.0-1 libggml0-backend-hip=0.27.0-1"
# What the DT_NEEDED closure of those needs beyond sid-root (found by unpacking and checking each DT_NEEDED, not
# from Depends), with the sonames each one supplies to it:
CLOSURE="
  libhipblas2=6.4.4-1                     libhipblas.so.2       (libggml-hip.so)
  libroctx64-4=6.4.1-1                    libroctx64.so.4       (librocblas)
  libc6=2.43-7                            libc.so.6 libm.so.6 ld-linux-x86-64.so.2
  libstdc++6=16.2.0-4                     libstdc++.so.6
  libgcc-s1=16.2.0-4                      libgcc_s.so.1
  libgomp1=16.2.0-4                       libgomp.so.1          (libggml-base, libggml-cpu-*)
  libssl3t64=3.6.5-1                      libssl.so.3 libcrypto.so.3 (llama-cli, libllama-common, -server-impl)
  libelf1t64=0.196-1                      libelf.so.1           (libhsa-runtime64)
  libdrm2=2.4.134-3                       libdrm.so.2           (libhsa-runtime64)
  libdrm-amdgpu1=2.4.134-3                libdrm_amdgpu.so.1    (libhsa-runtime64)
  libnuma1=2.0.19-1+b2                    libnuma.so.1          (libamdhip64, libhsa-runtime64)
  zlib1g=1:1.3.dfsg+really1.3.2-4         libz.so.1             (libelf, libcrypto)
  libzstd1=1.5.7+dfsg-4                   libzstd.so.1          (libelf, libcrypto, libamd_comgr, libLLVM)
  libamd-comgr3=7.0.2+dfsg-3              libamd_comgr.so.3     (dlopen()ed by libamdhip64; the only sid version)
  libllvm21=1:21.1.8-14                   libLLVM.so.21.1       (libamd_comgr)
  libffi8=3.8.0-2                         libffi.so.8           (libLLVM)
  libedit2=3.1-20260512-1                 libedit.so.2          (libLLVM)
  libz3-4=4.13.3-1.1                      libz3.so.4            (libLLVM)
  libxml2-16=2.15.4+dfsg-1+b1             libxml2.so.16         (libLLVM)
  libtinfo6=6.6+20260608-2                libtinfo.so.6         (libedit)
  libbsd0=0.12.2-3                        libbsd.so.0           (libedit)
  libmd0=1.3.0-1                          libmd.so.0            (libbsd)
"""
# Not unpacked: libclang-common-21-dev, which libamd-comgr3 Depends on (clang's resource headers, used only when
# comgr compiles source; no ELF file needs it).
# Libraries that are dlopen()ed by name rather than DT_NEEDED; the closure check below starts from them too.
DLOPENED="libamd_comgr.so.3"
CLOSURE=$(printf '%s\n' "$CLOSURE" | awk '{print $1}' | tr '\n' ' ')
PKGS="$LLAMA $CLOSURE"

debfile() {  # package=version -> path of its .deb as apt-get download names it
  p=${1%%=*}; v=${1#*=}
  printf '%s/%s_%s_amd64.deb\n' "$DEBS" "$p" "$(printf %s "$v" | sed 's/:/%3a/')"
}
mkdir -p "$DEBS" "$UNP"
want=""
for pv in $PKGS; do [ -s "$(debfile "$pv")" ] || want="$want $pv"; done
if [ -n "$want" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  (cd "$DEBS" && apt-get download $want)
fi

# Unpack each package into its own folder.
srcs=""
for pv in $PKGS; do
  p=${pv%%=*}; v=${pv#*=}
  d="$UNP/${p}_$(printf %s "$v" | tr ':~' '__')"
  [ -d "$d" ] || { rm -rf "$d.part" && mkdir -p "$d.part" && dpkg-deb -x "$(debfile "$pv")" "$d.part" && mv "$d.part" "$d"; }
  srcs="$srcs $d"
done

# The tree: a hard-linked copy of sid-root (made once; built under .part and renamed when complete).
work=$ROOT
if [ ! -d "$ROOT" ]; then
  work=$ROOT.part; rm -rf "$work"; cp -al "$BASE" "$work"
fi
# Merged /usr: the top-level aliases (sid's packages ship under /usr; base-files is not unpacked here).
mkdir -p "$work/usr/bin" "$work/usr/sbin" "$work/usr/lib" "$work/usr/lib64"
for a in bin sbin lib lib64; do
  if [ -L "$work/$a" ]; then
    [ "$(readlink "$work/$a")" = "usr/$a" ] || { echo "$work/$a is a symlink to something else" >&2; exit 1; }
  elif [ -e "$work/$a" ]; then
    echo "$work/$a exists and is not the symlink usr/$a" >&2; exit 1
  else
    ln -s "usr/$a" "$work/$a"
  fi
done

same() {  # same FILE1 FILE2: the same inode, the same symlink target, or the same content
  if [ -L "$1" ] || [ -L "$2" ]; then
    [ -L "$1" ] && [ -L "$2" ] && [ "$(readlink "$1")" = "$(readlink "$2")" ]
  elif [ -f "$1" ] && [ -f "$2" ]; then
    [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ] || cmp -s "$1" "$2"
  else
    return 1
  fi
}

# Check first: no file of these packages may replace a different file (of sid-root or of another package).
list=$(mktemp); trap 'rm -f "$list"' EXIT
for d in $srcs; do
  (cd "$d" && find . ! -type d | sed "s#^\./##; s#^#${d}/${TAB}#")
done | sort -s -t "$TAB" -k2,2 > "$list"
bad=0; prel=""; psrc=""
while IFS="$TAB" read -r d rel; do
  if [ "$rel" = "$prel" ]; then
    same "$psrc" "$d$rel" || { echo "two packages differ on: $rel ($psrc, $d$rel)" >&2; bad=1; }
  fi
  prel=$rel; psrc=$d$rel
  t="$work/$rel"
  if [ -L "$t" ] || [ -e "$t" ]; then
    same "$t" "$d$rel" || { echo "would overwrite: $rel (with $d$rel)" >&2; bad=1; }
  fi
done < "$list"
[ "$bad" = 0 ] || { echo "refusing to merge into $work" >&2; exit 1; }

# Merge: hard-link what is not there yet (symlinks are linked as symlinks).
n=0
while IFS="$TAB" read -r d rel; do
  t="$work/$rel"
  if [ ! -e "$t" ] && [ ! -L "$t" ]; then
    mkdir -p "$(dirname "$t")"; ln -P "$d$rel" "$t"; n=$((n + 1))
  fi
done < "$list"
# OWNED.txt is rewritten only when its content changes (a run that adds nothing leaves it as it is).
owned=$(mktemp); trap 'rm -f "$list" "$owned"' EXIT
sed "s#^$UNP/\([^/]*\)/$TAB#\1$TAB#" "$list" > "$owned"
cmp -s "$owned" "$UNP/OWNED.txt" || cat "$owned" > "$UNP/OWNED.txt"

# The dynamic loader's configuration, byte for byte as unstable ships it: etc/ld.so.conf and
# etc/ld.so.conf.d/libc.conf from libc-bin 2.43-7 (not unpacked: it would bring ldconfig, ldd, iconv, ...);
# etc/ld.so.conf.d/x86_64-linux-gnu.conf comes with libc6 above.
mkdir -p "$work/etc/ld.so.conf.d"
[ -e "$work/etc/ld.so.conf" ] || printf 'include /etc/ld.so.conf.d/*.conf\n\n' > "$work/etc/ld.so.conf"
[ -e "$work/etc/ld.so.conf.d/libc.conf" ] || printf '# libc default configuration\n/usr/local/lib\n' > "$work/etc/ld.so.conf.d/libc.conf"
[ -e "$work/etc/ld.so.conf.d/x86_64-linux-gnu.conf" ] || { echo "libc6 did not bring etc/ld.so.conf.d/x86_64-linux-gnu.conf" >&2; exit 1; }
# etc/ld.so.cache with the host's ldconfig; -X: create or change no symlink (the tree stays the packages' files).
# Written to etc/ld.so.cache.new (-C is taken inside the -r root) and moved over etc/ld.so.cache only if it differs;
# if it does not, etc/ gets its time stamps back (a run that adds nothing changes nothing).
stamp=""
if command -v ldconfig >/dev/null 2>&1 || [ -x /sbin/ldconfig ]; then
  stamp=$(mktemp); trap 'rm -f "$list" "$owned" "$stamp"' EXIT; touch -r "$work/etc" "$stamp"
  if PATH=$PATH:/sbin:/usr/sbin ldconfig -X -r "$work" -C /etc/ld.so.cache.new; then
    if cmp -s "$work/etc/ld.so.cache.new" "$work/etc/ld.so.cache"; then
      rm -f "$work/etc/ld.so.cache.new"; touch -r "$stamp" "$work/etc"
    else mv "$work/etc/ld.so.cache.new" "$work/etc/ld.so.cache"; fi
  else
    rm -f "$work/etc/ld.so.cache.new"; echo "ldconfig -r failed; etc/ld.so.cache not (re)made" >&2
  fi
fi

# Check (needs readelf; skipped without it): every DT_NEEDED reached from the ELF files of the four llama/ggml
# packages, and from each library of $DLOPENED (found in /usr/lib/x86_64-linux-gnu), resolves in the tree
# (RUNPATH, then /usr/lib/x86_64-linux-gnu, /lib/x86_64-linux-gnu). If not: exit 1,
# and a tree made in this run stays as sid-llama-root.part.
if command -v readelf >/dev/null 2>&1; then
  seen=$(mktemp); todo=$(mktemp); next=$(mktemp); trap 'rm -f "$list" "$owned" "$stamp" "$seen" "$todo" "$next"' EXIT
  grep -E "^(llama\.cpp-tools|libllama0|libggml0|libggml0-backend-hip)_" "$UNP/OWNED.txt" | cut -f2 |
    while read -r rel; do [ -f "$work/$rel" ] && [ ! -L "$work/$rel" ] && head -c4 "$work/$rel" | grep -q ELF && echo "$rel"; done > "$todo" || true
  miss=0
  for so in $DLOPENED; do
    if [ -e "$work/usr/lib/x86_64-linux-gnu/$so" ]; then
      (cd "$work/usr/lib/x86_64-linux-gnu" && realpath --relative-to="$work" -- "$(readlink -f -- "$so")") >> "$todo"
    else
      echo "unresolved: $so (dlopen()ed)" >&2; miss=1
    fi
  done
  while [ -s "$todo" ]; do
    : > "$next"
    while read -r rel; do
      grep -qxF "$rel" "$seen" && continue
      echo "$rel" >> "$seen"
      rp=$(readelf -dW "$work/$rel" | sed -n 's/.*(RUNPATH) *Library runpath: \[\(.*\)\]/\1/p; s/.*(RPATH) *Library rpath: \[\(.*\)\]/\1/p' | head -n1)
      for so in $(readelf -dW "$work/$rel" | sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/\1/p'); do
        hit=""
        for dd in $(printf %s "$rp" | tr ':' ' ' | sed "s#\\\$ORIGIN#/$(dirname "$rel")#g") /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
          if [ -e "$work$dd/$so" ]; then
            hit=$(cd "$work$dd" && realpath --relative-to="$work" -- "$(readlink -f -- "$so")")
            case $hit in ../*|/*) hit="" ;; esac   # a link leading out of the tree does not count
            break
          fi
        done
        if [ -z "$hit" ]; then echo "unresolved: $so (needed by $rel)" >&2; miss=1; else echo "$hit" >> "$next"; fi
      done
    done < "$todo"
    sort -u "$next" > "$todo"
  done
  echo "DT_NEEDED closure: $(wc -l < "$seen") ELF files checked, $( [ $miss = 0 ] && echo all resolved || echo SOME UNRESOLVED)"
  [ $miss = 0 ] || exit 1
fi

[ "$work" = "$ROOT" ] || mv "$work" "$ROOT"
echo "sid-llama-root: $n files newly linked; $(wc -l < "$UNP/OWNED.txt") owned by $(echo "$PKGS" | wc -w) packages, under $ROOT"
