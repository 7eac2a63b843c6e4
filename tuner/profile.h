/* The tuner profile written by `ncclsweep export --format tuner-profile` (docs/export.md):
 *
 *   ncclsweep-tuner-profile 1
 *   # collective min_bytes max_bytes nranks nnodes algorithm protocol channels
 *   allreduce 57344 229376 8 1 ring ll 0
 *
 * '#' lines and empty lines are skipped; the version line comes first; a rule names a
 * collective, an inclusive byte range (the nBytes NCCL passes to the tuner), the communicator
 * size it was measured at, one algorithm and one protocol (NCCL_ALGO / NCCL_PROTO tokens, any
 * case) and a channel count (0 = NCCL's own). First matching rule wins. Plain C, libc only. */
#ifndef NCCLSWEEP_TUNER_PROFILE_H
#define NCCLSWEEP_TUNER_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define NST_PROFILE_VERSION_LINE "ncclsweep-tuner-profile 1"
#define NST_MAX_RULES 256
#define NST_MAX_PROFILE_BYTES (1024 * 1024)
#define NST_MAX_LINE_CHARS 1024
#define NST_MAX_CHANNELS 64

/* One rule of the profile. */
typedef struct {
    int func;           /* nst_func_t */
    uint64_t min_bytes; /* inclusive */
    uint64_t max_bytes; /* inclusive */
    int n_ranks;
    int n_nodes;
    int algo;     /* cost-table row */
    int proto;    /* cost-table column */
    int channels; /* 0 = leave NCCL's count */
    int line;     /* 1-based line in the file, for messages */
} nst_rule_t;

typedef struct {
    nst_rule_t rules[NST_MAX_RULES];
    int count;
} nst_profile_t;

/* Parses `size` bytes of profile text into `out`. Returns 0 on success; otherwise -1 with a
 * sentence starting "line N: " (or without a line when the whole text is at fault) in `error`,
 * and `out->count` set to 0: a profile is used whole or not at all. */
int nst_profile_parse(const char* text, size_t size, nst_profile_t* out, char* error, size_t error_size);

/* Reads and parses the file at `path`; -1 with the reason in `error` (unreadable, too large,
 * or a parse error) and an empty profile otherwise. */
int nst_profile_load(const char* path, nst_profile_t* out, char* error, size_t error_size);

/* The first rule for this collective, size and communicator, or NULL. */
const nst_rule_t* nst_profile_match(const nst_profile_t* profile, int func, uint64_t n_bytes, size_t n_ranks,
                                    size_t n_nodes);

/* NCCL's names as its TUNING lines print them: "AllReduce", "RING", "LL" ("?" when out of range). */
const char* nst_func_name(int func);
const char* nst_algo_name(int algo);
const char* nst_proto_name(int proto);

#endif
