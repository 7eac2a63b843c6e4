/* libnccl-tuner-ncclsweep.so: NCCL tuner plugin (v5 ABI) that applies what an ncclsweep sweep
 * measured and nothing else. It reads the profile named by NCCLSWEEP_TUNER_PROFILE once per
 * communicator; for a collective, size and communicator a rule covers it makes the rule's
 * algorithm/protocol the cheapest entry of NCCL's cost table, and sets a channel count only when
 * the rule has one. Everything else returns with the table and *n_channels untouched, so NCCL
 * decides as if no plugin were loaded. It never fails NCCL: a missing or malformed profile is a
 * WARN and an empty rule set. Lines go through NCCL's logger (INFO + TUNING; docs/export.md
 * lists them, core/nccl/effective_nccl.cpp parses them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/nccl_tuner_abi.h"
#include "tuner/profile.h"

#define NST_EXPORT __attribute__((visibility("default")))
#define NST_PREFIX "ncclsweep tuner: "
#define NST_LOG(ctx, level, flags, ...)                                                          \
    do {                                                                                         \
        if ((ctx)->logger != NULL) (ctx)->logger(level, flags, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

typedef struct {
    nst_logger_t logger;
    size_t n_ranks;
    size_t n_nodes;
    char path[1024];                           /* NCCLSWEEP_TUNER_PROFILE as read at init, for messages */
    nst_profile_t profile;                     /* empty when there is none or it was rejected */
    unsigned char ignored_said[NST_MAX_RULES]; /* "NCCL ignores this combination" said for rule i */
} nst_context_t;

static nst_result_t nst_init(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                             nst_logger_t logger, nst_nvl_domain_info_v5_t* nvl_domain_info,
                             nst_tuner_constants_v5_t* constants) {
    (void)comm_id;
    (void)nvl_domain_info;
    (void)constants;
    if (context == NULL) return nst_invalid_argument;
    nst_context_t* ctx = (nst_context_t*)calloc(1, sizeof(nst_context_t));
    *context = ctx;
    if (ctx == NULL) return nst_success; /* NULL context: getCollInfo leaves everything to NCCL */
    ctx->logger = logger;
    ctx->n_ranks = n_ranks;
    ctx->n_nodes = n_nodes;
    const char* path = getenv("NCCLSWEEP_TUNER_PROFILE");
    if (path == NULL || path[0] == '\0') {
        NST_LOG(ctx, nst_log_warn, nst_subsys_init | nst_subsys_tuning,
                NST_PREFIX
                "NCCLSWEEP_TUNER_PROFILE is not set, so every collective is left to NCCL; set it to "
                "a file written by 'ncclsweep export --format tuner-profile'");
        return nst_success;
    }
    snprintf(ctx->path, sizeof(ctx->path), "%s", path);
    char error[512];
    if (nst_profile_load(path, &ctx->profile, error, sizeof(error)) != 0) {
        NST_LOG(ctx, nst_log_warn, nst_subsys_init | nst_subsys_tuning,
                NST_PREFIX
                "profile %s rejected: %s; every collective is left to NCCL (re-export it with "
                "'ncclsweep export --format tuner-profile')",
                ctx->path, error);
        return nst_success;
    }
    int applicable = 0;
    for (int i = 0; i < ctx->profile.count; ++i)
        applicable += (size_t)ctx->profile.rules[i].n_ranks == n_ranks &&
                      (size_t)ctx->profile.rules[i].n_nodes == n_nodes;
    NST_LOG(ctx, nst_log_info, nst_subsys_init | nst_subsys_tuning,
            NST_PREFIX "profile %s loaded: %d rules, %d for nRanks %zu nNodes %zu", ctx->path,
            ctx->profile.count, applicable, n_ranks, n_nodes);
    return nst_success;
}

static nst_result_t nst_get_coll_info(void* context, nst_func_t coll_type, size_t n_bytes, int num_pipe_ops,
                                      float** cost_table, int num_algo, int num_proto, int reg_buff,
                                      int* n_channels) {
    (void)num_pipe_ops;
    (void)reg_buff;
    nst_context_t* ctx = (nst_context_t*)context;
    if (ctx == NULL || cost_table == NULL || n_channels == NULL) return nst_success;
    const nst_rule_t* rule =
        nst_profile_match(&ctx->profile, (int)coll_type, n_bytes, ctx->n_ranks, ctx->n_nodes);
    if (rule == NULL) return nst_success;
    /* NCCL passes float[num_algo][num_proto] cast to float**: index it as one flat array. */
    float* table = (float*)cost_table;
    const int in_table = rule->algo < num_algo && rule->proto < num_proto;
    if (!in_table || table[rule->algo * num_proto + rule->proto] < 0.0f) {
        const int index = (int)(rule - ctx->profile.rules);
        if (!ctx->ignored_said[index]) {
            ctx->ignored_said[index] = 1;
            NST_LOG(ctx, nst_log_info, nst_subsys_tuning,
                    NST_PREFIX
                    "%s %zu bytes: %s:%d asks for %s/%s, which NCCL does not offer here (cost -1); "
                    "left to NCCL (said once per rule)",
                    nst_func_name(coll_type), n_bytes, ctx->path, rule->line, nst_algo_name(rule->algo),
                    nst_proto_name(rule->proto));
        }
        return nst_success;
    }
    table[rule->algo * num_proto + rule->proto] = 0.0f;
    if (rule->channels > 0) *n_channels = rule->channels;
    NST_LOG(ctx, nst_log_info, nst_subsys_tuning,
            NST_PREFIX "%s %zu bytes -> algo %s proto %s channels %d (%s:%d)", nst_func_name(coll_type),
            n_bytes, nst_algo_name(rule->algo), nst_proto_name(rule->proto), rule->channels, ctx->path,
            rule->line);
    return nst_success;
}

static nst_result_t nst_finalize(void* context) {
    free(context);
    return nst_success;
}

NST_EXPORT const nst_tuner_v5_t ncclTunerPlugin_v5 = {
    "ncclsweep",
    nst_init,
    nst_get_coll_info,
    nst_finalize,
};
