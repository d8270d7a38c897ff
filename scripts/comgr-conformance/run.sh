#!/usr/bin/env bash
# comgr conformance: hand real offload bundles to Debian's own comgr
# (libamd-comgr3 7.2.x, Debian experimental) and compare the code object it
# picks for each GPU with `gfxscan check --json`.
#
# Usage:  sudo scripts/comgr-conformance/run.sh [FILE...]
#   With no FILE, the default test set below (files on the project's
#   corpus machines; missing ones are skipped with a note). Each FILE may be a
#   host ELF with a .hip_fatbin, a bare offload bundle (.hsaco/.co) or a wheel
#   (.whl: unpacked, and every library in it with device code is used).
#
# Environment:
#   GPUS              space-separated target IDs (default: the ten below)
#   GFXSCAN           gfxscan binary (default: target/release/gfxscan, built
#                     with `cargo build --release` when missing)
#   GFXSCAN_SID_ROOT  chroot folder (default /var/tmp/gfxscan-sid)
#   DEBIAN_MIRROR     Debian mirror URL (default: the first Debian archive URI
#                     in this host's /etc/apt/sources.list*)
#   KEEP_WORK=1       keep the extracted bundles and raw results
#
# What it needs: root (chroot, debootstrap), apt, python3, unzip, network access
# to a Debian mirror (only the first run: it sets up the chroot), about 600 MB
# under /var/tmp. Debian's comgr 7.2 needs glibc >= 2.38, so it runs in a
# Debian sid chroot made with debootstrap, with experimental added to its apt
# sources. Setting up is idempotent: later runs reuse the chroot and only
# rebuild lookup.c when it changed.
#
# How: `gfxscan scan --json FILE` lists the code objects; each one's location
# gives its bundle's file offset. For every uncompressed bundle
# (__CLANG_OFFLOAD_BUNDLE__) the bytes from that offset are written to a file
# (the bundle, up to its furthest entry end, and at least 4096 bytes, as the HIP
# runtime hands comgr a 4096-byte window), and lookup.c runs inside the chroot:
# it makes the same amd_comgr_lookup_code_object call as clr's
# FatBinaryInfo::ExtractFatBinaryUsingCOMGR (native ISA name, its generic name
# with the device's sramecc/xnack re-appended, and the two SPIR-V names;
# native wins over generic). Compressed bundles (CCOB) go through comgr's
# UNBUNDLE action in clr instead; they are NOT covered: a file with any
# compressed bundle is reported as skipped.
#
# Verdicts: comgr says "ok" for (file, GPU) when every bundle of the file has a
# pick, else "missing". gfxscan's is installs[].gpus[].verdicts[].status of
# `gfxscan check -q --json FILE --gpu G` for that library. The entry that loads
# from the file's first bundle is compared too (gfxscan's `loads`). The table,
# "N of M (file, GPU) pairs agree" and every disagreement are printed; the
# exit status is 1 on any disagreement, 0 when all agree, 2 on a setup error.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CHROOT=${GFXSCAN_SID_ROOT:-/var/tmp/gfxscan-sid}
GFXSCAN=${GFXSCAN:-$REPO/target/release/gfxscan}
GPUS=${GPUS:-"gfx900:xnack- gfx906:sramecc+:xnack- gfx906:sramecc-:xnack- gfx908:sramecc+:xnack- gfx90a:sramecc+:xnack- gfx942:sramecc+:xnack- gfx1030 gfx1100 gfx1151 gfx1201"}

DEFAULT_FILES=(
  /root/gfxscan-corpus/deb/sid-root/usr/lib/x86_64-linux-gnu/librocsolver.so.0.4
  /root/gfxscan-corpus/wheels/cupy_rocm_4_0-10.6.0-cp39-cp39-manylinux1_x86_64.whl
  /root/gfxscan-corpus/deb/trixie-root/usr/lib/x86_64-linux-gnu/librocrand.so.1
  /work/shared/corpus/files/deb/trixie/libspfft1_1.1.1-3/usr/lib/x86_64-linux-gnu/libspfft.so.1.1.1
  /work/shared/corpus/files/whl/gafime_rocm-0.4.7/gafime_rocm/libgafime_rocm.so
  /work/shared/corpus/files/whl/amd_mori-1.0.0/mori/libmori_io.so
  /work/shared/corpus/files/whl/cupy_rocm_5_0-13.3.0/cupy/random/_generator_api.cpython-311-x86_64-linux-gnu.so
  "/work/shared/corpus/files/github/rocmlibs/hipblaslt-gfx110x/hipblaslt-rocmlibs-for-gfx1100-gfx1101-gfx1102-gfx1103-gfx1150-for hip6.2/library/hipblasltTransform.hsaco"
)

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'comgr-conformance: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
command -v python3 >/dev/null || die "needs python3"

# --- the Debian mirror this host's apt uses ---------------------------------
host_mirror() {
  local uri
  # deb822 .sources: URIs: lines; one-line format: deb URI suite ...
  uri=$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{for (i = 2; i <= NF; i++) print $i}';
           grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{u = $2; if (u ~ /^\[/) u = $3; print u}'; } |
         grep -E '/debian/?$' | head -n1 )
  [ -n "$uri" ] || return 1
  printf '%s\n' "${uri%/}"
}

# --- the sid chroot with comgr 7.2 from experimental ------------------------
setup_chroot() {
  local mirror=${DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    mirror=$(host_mirror) || die "no Debian mirror in /etc/apt/sources.list*; set DEBIAN_MIRROR"
  fi
  if [ ! -x "$CHROOT/usr/bin/apt-get" ]; then
    if ! command -v debootstrap >/dev/null; then
      log "installing debootstrap"
      apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
    fi
    log "debootstrap sid into $CHROOT from $mirror"
    debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates \
      sid "$CHROOT" "$mirror" >"$CHROOT.debootstrap.log" 2>&1 ||
      die "debootstrap failed, see $CHROOT.debootstrap.log"
  fi
  printf 'deb %s sid main\n' "$mirror" >"$CHROOT/etc/apt/sources.list"
  printf 'deb %s experimental main\n' "$mirror" >"$CHROOT/etc/apt/sources.list.d/experimental.list"
  # A mirror may serve a frozen snapshot whose Release files have expired.
  printf 'Acquire::Check-Valid-Until "false";\n' >"$CHROOT/etc/apt/apt.conf.d/99gfxscan-no-valid-until"
  local have
  have=$(chroot "$CHROOT" dpkg-query -W -f='${Version}' libamd-comgr-dev 2>/dev/null || true)
  if [[ "$have" != 7.2.* ]] || ! chroot "$CHROOT" dpkg-query -W gcc libc6-dev >/dev/null 2>&1; then
    log "installing libamd-comgr3/libamd-comgr-dev from experimental (have: ${have:-none})"
    chroot "$CHROOT" apt-get update -qq >/dev/null ||
      die "apt-get update in the chroot failed"
    chroot "$CHROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends gcc libc6-dev >/dev/null
    chroot "$CHROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends -t experimental libamd-comgr3 libamd-comgr-dev >/dev/null ||
      die "could not install libamd-comgr-dev from experimental"
    have=$(chroot "$CHROOT" dpkg-query -W -f='${Version}' libamd-comgr-dev)
    [[ "$have" == 7.2.* ]] || die "experimental gave libamd-comgr-dev $have, not 7.2.x"
  fi
  COMGR_VERSION=$have
}

build_lookup() {
  local dir="$CHROOT/opt/gfxscan-conformance"
  mkdir -p "$dir"
  if [ ! -x "$dir/lookup" ] || ! cmp -s "$HERE/lookup.c" "$dir/lookup.c"; then
    cp "$HERE/lookup.c" "$dir/lookup.c"
    log "building lookup.c against $(chroot "$CHROOT" dpkg-query -W -f='libamd-comgr-dev ${Version}' libamd-comgr-dev)"
    chroot "$CHROOT" gcc -O2 -Wall -Wextra -Werror -o /opt/gfxscan-conformance/lookup \
      /opt/gfxscan-conformance/lookup.c -lamd_comgr || die "lookup.c did not build"
  fi
}

setup_chroot
build_lookup

if [ ! -x "$GFXSCAN" ]; then
  log "building gfxscan (cargo build --release)"
  (cd "$REPO" && cargo build --release -q) || die "cargo build failed"
fi

WORK=$(mktemp -d "$CHROOT/tmp/gfxscan-conformance.XXXXXX")
cleanup() { if [ "${KEEP_WORK:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT

# --- the input files ---------------------------------------------------------
if [ $# -gt 0 ]; then INPUTS=("$@"); else INPUTS=("${DEFAULT_FILES[@]}"); fi
: >"$WORK/files.txt"
: >"$WORK/notes.txt"
n=0
for f in "${INPUTS[@]}"; do
  if [ ! -e "$f" ]; then
    printf 'not found, skipped: %s\n' "$f" >>"$WORK/notes.txt"
    continue
  fi
  case "$f" in
    *.whl)
      n=$((n + 1))
      d="$WORK/wheel$n"
      mkdir -p "$d"
      unzip -q -o "$f" -d "$d" || die "unzip $f failed"
      # every file of the wheel with device code
      "$GFXSCAN" scan -q --json "$d" |
        python3 -c 'import json,sys,os
d=json.load(sys.stdin); root=sys.argv[1]
for f in d["files"]:
    if f.get("code_objects"):
        print(os.path.join(root, f["path"]) if f["path"] else root)' "$d" >>"$WORK/files.txt"
      ;;
    *) printf '%s\n' "$f" >>"$WORK/files.txt" ;;
  esac
done

log "comgr $COMGR_VERSION; gfxscan $("$GFXSCAN" --version 2>/dev/null | head -n1)"

# --- extract, look up, compare ----------------------------------------------
export CHROOT WORK GFXSCAN GPUS COMGR_VERSION
python3 - <<'PY'
import json, os, shutil, struct, subprocess, sys

CHROOT = os.environ["CHROOT"]
WORK = os.environ["WORK"]
GFXSCAN = os.environ["GFXSCAN"]
GPUS = os.environ["GPUS"].split()
LOOKUP = "/opt/gfxscan-conformance/lookup"
MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
WINDOW = 4096  # what clr passes to amd_comgr_set_data


def in_chroot(path):
    assert path.startswith(CHROOT + "/")
    return path[len(CHROOT):]


def bundle_length(f, off):
    """Furthest entry end of the plain bundle at file offset off."""
    f.seek(off)
    head = f.read(32)
    if len(head) < 32 or head[:24] != MAGIC:
        raise ValueError("no bundle magic at %d" % off)
    count = struct.unpack("<Q", head[24:32])[0]
    pos, end = 32, 32
    f.seek(off + 32)
    for _ in range(count):
        eoff, esize, idlen = struct.unpack("<QQQ", f.read(24))
        f.read(idlen)
        pos += 24 + idlen
        end = max(end, eoff + esize)
    return max(end, pos), pos  # bundle length, header (table) length


def run_lookup(bfile, window):
    out = subprocess.run(
        ["chroot", CHROOT, LOOKUP, "-w", str(window), in_chroot(bfile)] + GPUS,
        check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        t, verdict, pick, entry, off, size, status, queries = line.split("\t")
        res[t] = dict(verdict=verdict, pick=pick, entry=entry, status=status)
    return res


def gfxscan_verdict(path, g):
    ck = subprocess.run([GFXSCAN, "check", "-q", "--json", path, "--gpu", g],
                        capture_output=True, text=True)
    if ck.returncode not in (0, 1):
        return "error(%d)" % ck.returncode, None, ck.stderr.strip()[:200], None
    d = json.loads(ck.stdout)
    verdicts = [v for inst in d["installs"] for gp in inst["gpus"] for v in gp["verdicts"]
                if os.path.realpath(v["library"]) == os.path.realpath(path)]
    if len(verdicts) != 1:
        return "no-verdict(%d)" % len(verdicts), None, "", None
    v = verdicts[0]
    return v["status"], v.get("loads"), v.get("detail", ""), v.get("kind")


copied = None
tensile_notes = {}
largest_table = 0
files = [l.rstrip("\n") for l in open(os.path.join(WORK, "files.txt")) if l.strip()]
notes = [l.rstrip("\n") for l in open(os.path.join(WORK, "notes.txt")) if l.strip()]
rows, disagreements, window_diffs, big_tables = [], [], [], []

for path in files:
    scan = json.loads(subprocess.run([GFXSCAN, "scan", "-q", "--json", path],
                                     check=True, capture_output=True, text=True).stdout)
    plain, other = set(), set()
    for fe in scan["files"]:
        for co in fe.get("code_objects", []):
            loc = co.get("location", {})
            if loc.get("in") != "bundle-entry":
                continue
            (plain if loc.get("format") == "plain" else other).add(loc["bundle_offset"])
    short = ("whl:" + path[len(WORK) + 1:].split("/", 1)[1]) if path.startswith(WORK + "/") else path
    short = short if len(short) < 60 else "…" + short[-58:]
    if other:
        notes.append("skipped (compressed bundles, not covered): %s" % path)
        continue
    if not plain:
        notes.append("skipped (no uncompressed bundle): %s" % path)
        continue
    offsets = sorted(plain)
    per_bundle = []  # [(offset, {gpu: result})]
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        for i, off in enumerate(offsets):
            blen, tlen = bundle_length(f, off)
            largest_table = max(largest_table, tlen)
            if tlen > WINDOW:
                big_tables.append("%s bundle @%d: entry table is %d bytes, past clr's %d-byte window"
                                  % (short, off, tlen, WINDOW))
            f.seek(off)
            data = f.read(max(blen, WINDOW))  # what the 4096-byte window sees
            bfile = os.path.join(WORK, "b.bin")
            with open(bfile, "wb") as o:
                o.write(data)
            hip = run_lookup(bfile, WINDOW)
            full = run_lookup(bfile, blen)
            for g in GPUS:
                if (hip[g]["verdict"], hip[g]["entry"]) != (full[g]["verdict"], full[g]["entry"]):
                    window_diffs.append("%s bundle @%d %s: 4096-byte window %s/%s, whole bundle %s/%s"
                                        % (short, off, g, hip[g]["verdict"], hip[g]["entry"],
                                           full[g]["verdict"], full[g]["entry"]))
            per_bundle.append((off, hip))
    for g in GPUS:
        ok_bundles = sum(1 for _, r in per_bundle if r[g]["verdict"] == "ok")
        comgr_status = "ok" if ok_bundles == len(per_bundle) else "missing"
        first = per_bundle[0][1][g]
        comgr_loads = first["entry"] if first["verdict"] == "ok" else None
        comgr_pick = first["pick"] if first["verdict"] == "ok" else first["verdict"]
        gs_status, gs_loads, detail, kind = gfxscan_verdict(path, g)
        via_copy = False
        if kind == "tensile":
            # gfxscan judges a file it takes for a Tensile code file (by its
            # name and folder) by the Tensile indexes, not by its bundle: ask
            # again about a neutral-named copy, and note the Tensile verdict.
            tensile_notes.setdefault(short, set()).add(gs_status)
            copy = os.path.join(WORK, "copy", "bundle-under-test.hsaco")
            if not os.path.exists(copy) or copied != path:
                os.makedirs(os.path.dirname(copy), exist_ok=True)
                shutil.copyfile(path, copy)
                copied = path
            gs_status, gs_loads, detail, kind = gfxscan_verdict(copy, g)
            via_copy = True
        agree_status = gs_status == comgr_status
        agree_loads = gs_loads == comgr_loads
        agree = agree_status and agree_loads
        row = dict(file=short, gpu=g, bundles=len(per_bundle), ok_bundles=ok_bundles,
                   comgr=comgr_status, pick=comgr_pick, comgr_loads=comgr_loads,
                   gfxscan=gs_status + ("*" if via_copy else ""), gfxscan_loads=gs_loads, agree=agree, detail=detail)
        rows.append(row)
        if not agree:
            disagreements.append(row)

def ent(e):
    if e is None:
        return "-"
    return e.replace("amdgcn-amd-amdhsa-", "…")

w = max(len(r["file"]) for r in rows) if rows else 10
print("%-*s  %-22s  %-9s %-8s %-28s  %-8s %-28s  %s" % (
    w, "file", "GPU", "bundles", "comgr", "comgr loads (1st bundle)", "gfxscan", "gfxscan loads", "agree"))
last = None
for r in rows:
    name = r["file"] if r["file"] != last else ""
    last = r["file"]
    print("%-*s  %-22s  %4d/%-4d %-8s %-28s  %-8s %-28s  %s" % (
        w, name, r["gpu"], r["ok_bundles"], r["bundles"], r["comgr"],
        ent(r["comgr_loads"]) + ("" if r["pick"] in ("native", "missing", "error") else " (" + r["pick"] + ")"),
        r["gfxscan"], ent(r["gfxscan_loads"]), "yes" if r["agree"] else "NO"))
print()
print("comgr: Debian libamd-comgr3 %s; bundles looked up with clr's %d-byte window" % (os.environ["COMGR_VERSION"], WINDOW))
for n in notes:
    print("note:", n)
for f, st in tensile_notes.items():
    print("note: gfxscan judges %s as a Tensile code file (verdict %s, from the Tensile indexes);"
          " rows marked * compare gfxscan's verdict on a neutral-named copy of the same bytes" % (f, "/".join(sorted(st))))
for b in big_tables:
    print("note:", b)
print("largest entry table: %d bytes (clr hands comgr %d bytes)" % (largest_table, WINDOW))
if window_diffs:
    print("4096-byte window vs whole bundle differ (clr uses the window):")
    for d in window_diffs:
        print("  " + d)
else:
    print("4096-byte window and whole bundle gave the same picks for every bundle")
print("%d of %d (file, GPU) pairs agree" % (len(rows) - len(disagreements), len(rows)))
if disagreements:
    print("disagreements:")
    for r in disagreements:
        print("  %s %s: comgr %s (loads %s, %d/%d bundles), gfxscan %s (loads %s) -- %s" % (
            r["file"], r["gpu"], r["comgr"], r["comgr_loads"], r["ok_bundles"], r["bundles"],
            r["gfxscan"], r["gfxscan_loads"], r["detail"]))
if os.environ.get("KEEP_WORK") == "1":
    json.dump(rows, open(os.path.join(WORK, "rows.json"), "w"), indent=1)
sys.exit(1 if disagreements or not rows else 0)
PY
