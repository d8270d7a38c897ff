/*
 * lookup.c - ask the real comgr (amd_comgr_lookup_code_object) which entry of
 * an uncompressed clang offload bundle the HIP runtime would load for a GPU.
 *
 * It reproduces the uncompressed path of clr's
 * FatBinaryInfo::ExtractFatBinaryUsingCOMGR (hipamd/src/hip_fatbin.cpp,
 * PopulateCodeObjectMap):
 *
 *   - the query set is a std::set<std::string> (so: sorted, no duplicates) of
 *       "spirv64-amd-amdhsa--amdgcnspirv", "spirv64-amd-amdhsa-unknown-amdgcnspirv",
 *       the device's ISA name "amdgcn-amd-amdhsa--<target id with features>",
 *       and TargetToGeneric(ISA name): the generic processor from clr's map with
 *       the device's sramecc and xnack features re-appended (nothing if the
 *       processor has no generic);
 *   - one data object of kind AMD_COMGR_DATA_KIND_FATBIN; clr sets it to the
 *     first 4096 bytes of the image ("There is no way to find size of offload
 *     bundle, so we pass 4096 here"), which this program does too unless told
 *     otherwise with -w (-w 0: the whole file);
 *   - amd_comgr_lookup_code_object(data, queries, n); a non-success status
 *     makes clr return hipErrorInvalidImage for the whole bundle;
 *   - the native result wins over the generic one; failing both, a SPIR-V
 *     entry would be JIT-compiled (reported as "spirv").
 *
 * Usage: lookup [-w WINDOW] BUNDLE_FILE TARGET_ID...
 *   BUNDLE_FILE holds the bundle's bytes from its magic on (more bytes after
 *   the bundle are fine, and are what clr's 4096-byte window sees too; a file
 *   shorter than the window is padded with zero bytes).
 *   TARGET_ID is what the device reports, e.g. gfx906:sramecc+:xnack-, gfx1030.
 *
 * Output: one tab-separated line per TARGET_ID:
 *   target  verdict  pick  entry_id  offset  size  comgr_status  queries
 * verdict: ok | missing | error (comgr returned non-success: clr fails the
 * bundle); pick: native | generic | spirv | none; entry_id is the bundle entry
 * at the offset/size comgr returned (looked up in the bundle's own table), or
 * "-". Exit status: 0 when every line was printed, 2 on a usage or I/O error.
 */
#include <amd_comgr/amd_comgr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ISA_PREFIX "amdgcn-amd-amdhsa--"
#define SPIRV_EMPTY "spirv64-amd-amdhsa--amdgcnspirv"
#define SPIRV_UNKNOWN "spirv64-amd-amdhsa-unknown-amdgcnspirv"

/* clr's TargetGenericMap, keyed by processor. */
static const char *const generic_map[][2] = {
    {"gfx900", "gfx9-generic"},     {"gfx902", "gfx9-generic"},
    {"gfx904", "gfx9-generic"},     {"gfx906", "gfx9-generic"},
    {"gfx909", "gfx9-generic"},     {"gfx90c", "gfx9-generic"},
    {"gfx942", "gfx9-4-generic"},   {"gfx950", "gfx9-4-generic"},
    {"gfx1010", "gfx10-1-generic"}, {"gfx1011", "gfx10-1-generic"},
    {"gfx1012", "gfx10-1-generic"}, {"gfx1013", "gfx10-1-generic"},
    {"gfx1030", "gfx10-3-generic"}, {"gfx1031", "gfx10-3-generic"},
    {"gfx1032", "gfx10-3-generic"}, {"gfx1033", "gfx10-3-generic"},
    {"gfx1034", "gfx10-3-generic"}, {"gfx1035", "gfx10-3-generic"},
    {"gfx1036", "gfx10-3-generic"}, {"gfx1100", "gfx11-generic"},
    {"gfx1101", "gfx11-generic"},   {"gfx1102", "gfx11-generic"},
    {"gfx1103", "gfx11-generic"},   {"gfx1150", "gfx11-generic"},
    {"gfx1151", "gfx11-generic"},   {"gfx1152", "gfx11-generic"},
    {"gfx1153", "gfx11-generic"},   {"gfx1200", "gfx12-generic"},
    {"gfx1201", "gfx12-generic"},
};

/* clr's TargetFeatureCheck: "feature+" if present, else "feature-", else "". */
static const char *feature_of(const char *isa, const char *feature, char *buf,
                              size_t n) {
  char plus[32], minus[32];
  snprintf(plus, sizeof plus, "%s+", feature);
  snprintf(minus, sizeof minus, "%s-", feature);
  buf[0] = '\0';
  if (strstr(isa, feature) == NULL)
    return buf;
  if (strstr(isa, plus) != NULL)
    snprintf(buf, n, "%s", plus);
  else if (strstr(isa, minus) != NULL)
    snprintf(buf, n, "%s", minus);
  return buf;
}

/* clr's TargetToGeneric; returns 0 when the processor has no generic. */
static int target_to_generic(const char *isa, char *out, size_t n) {
  char sramecc[32], xnack[32], base[256];
  feature_of(isa, "sramecc", sramecc, sizeof sramecc);
  feature_of(isa, "xnack", xnack, sizeof xnack);
  size_t len = strcspn(isa, ":");
  if (len >= sizeof base)
    return 0;
  memcpy(base, isa, len);
  base[len] = '\0';
  const char *proc = base;
  if (strncmp(proc, ISA_PREFIX, strlen(ISA_PREFIX)) != 0)
    return 0;
  proc += strlen(ISA_PREFIX);
  for (size_t i = 0; i < sizeof generic_map / sizeof generic_map[0]; i++) {
    if (strcmp(proc, generic_map[i][0]) == 0) {
      snprintf(out, n, "%s%s%s%s%s%s", ISA_PREFIX, generic_map[i][1],
               sramecc[0] ? ":" : "", sramecc, xnack[0] ? ":" : "", xnack);
      return 1;
    }
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Find the entry with this offset and size in the bundle's own table. */
static void entry_at(const unsigned char *buf, size_t len, uint64_t off,
                     uint64_t size, char *out, size_t n) {
  snprintf(out, n, "?");
  if (len < 32)
    return;
  uint64_t count = rd64(buf + 24);
  size_t pos = 32;
  for (uint64_t i = 0; i < count; i++) {
    if (pos + 24 > len)
      return;
    uint64_t eoff = rd64(buf + pos), esize = rd64(buf + pos + 8),
             idlen = rd64(buf + pos + 16);
    pos += 24;
    if (idlen > len - pos)
      return;
    if (eoff == off && esize == size) {
      size_t k = idlen < n - 1 ? (size_t)idlen : n - 1;
      memcpy(out, buf + pos, k);
      out[k] = '\0';
      return;
    }
    pos += idlen;
  }
}

static const char *status_name(amd_comgr_status_t s) {
  const char *str = NULL;
  if (amd_comgr_status_string(s, &str) != AMD_COMGR_STATUS_SUCCESS || !str)
    return "UNKNOWN";
  return str;
}

int main(int argc, char **argv) {
  size_t window = 4096;
  int argi = 1;
  if (argi + 1 < argc && strcmp(argv[argi], "-w") == 0) {
    window = (size_t)strtoull(argv[argi + 1], NULL, 10);
    argi += 2;
  }
  if (argc - argi < 2) {
    fprintf(stderr, "usage: %s [-w WINDOW] BUNDLE_FILE TARGET_ID...\n", argv[0]);
    return 2;
  }
  const char *path = argv[argi++];
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long flen = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (flen < 0) {
    perror(path);
    return 2;
  }
  size_t len = (size_t)flen;
  size_t datalen = window == 0 ? len : window;
  size_t alloc = len > datalen ? len : datalen;
  unsigned char *buf = calloc(alloc ? alloc : 1, 1);
  if (!buf || fread(buf, 1, len, f) != len) {
    fprintf(stderr, "%s: read failed\n", path);
    return 2;
  }
  fclose(f);

  for (; argi < argc; argi++) {
    const char *target = argv[argi];
    char isa[512], generic[512];
    snprintf(isa, sizeof isa, "%s%s", ISA_PREFIX, target);
    int has_generic = target_to_generic(isa, generic, sizeof generic);

    /* std::set<std::string>: sorted and unique. */
    const char *names[4];
    size_t n = 0;
    names[n++] = SPIRV_EMPTY;
    names[n++] = SPIRV_UNKNOWN;
    names[n++] = isa;
    if (has_generic)
      names[n++] = generic;
    qsort(names, n, sizeof names[0], cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
      if (u == 0 || strcmp(names[u - 1], names[i]) != 0)
        names[u++] = names[i];
    n = u;

    amd_comgr_code_object_info_t q[4];
    for (size_t i = 0; i < n; i++) {
      q[i].isa = names[i];
      q[i].size = 0;
      q[i].offset = 0;
    }

    amd_comgr_data_t data;
    amd_comgr_status_t st = amd_comgr_create_data(AMD_COMGR_DATA_KIND_FATBIN, &data);
    if (st == AMD_COMGR_STATUS_SUCCESS)
      st = amd_comgr_set_data(data, datalen, (const char *)buf);
    if (st == AMD_COMGR_STATUS_SUCCESS)
      st = amd_comgr_lookup_code_object(data, q, n);
    amd_comgr_release_data(data);

    char queries[2048] = "";
    for (size_t i = 0; i < n; i++) {
      strncat(queries, i ? "," : "", sizeof queries - strlen(queries) - 1);
      strncat(queries, names[i], sizeof queries - strlen(queries) - 1);
    }

    const char *verdict = "missing", *pick = "none";
    const amd_comgr_code_object_info_t *hit = NULL;
    if (st != AMD_COMGR_STATUS_SUCCESS) {
      verdict = "error";
    } else {
      const amd_comgr_code_object_info_t *native = NULL, *gen = NULL, *spv = NULL;
      for (size_t i = 0; i < n; i++) {
        if (q[i].size == 0)
          continue;
        if (strcmp(q[i].isa, isa) == 0)
          native = &q[i];
        else if (has_generic && strcmp(q[i].isa, generic) == 0)
          gen = &q[i];
        else if (!spv) /* clr prefers the "unknown" spelling; both are SPIR-V */
          spv = &q[i];
      }
      if (native) {
        hit = native;
        pick = "native";
      } else if (gen) {
        hit = gen;
        pick = "generic";
      } else if (spv) {
        hit = spv;
        pick = "spirv";
      }
      if (hit)
        verdict = "ok";
    }
    char entry[512] = "-";
    if (hit)
      entry_at(buf, len, hit->offset, hit->size, entry, sizeof entry);
    printf("%s\t%s\t%s\t%s\t%llu\t%llu\t%s\t%s\n", target, verdict, pick, entry,
           hit ? (unsigned long long)hit->offset : 0ULL,
           hit ? (unsigned long long)hit->size : 0ULL, status_name(st), queries);
  }
  free(buf);
  return 0;
}
