/* The part of NCCL's external tuner interface this plugin implements, declared here from NCCL's
 * documented plugin interface so the plugin builds without NCCL's headers. Sources (NCCL 2.27 /
 * 2.28): src/include/plugin/tuner/tuner_v5.h (the v5 table of entry points),
 * src/plugin/tuner/tuner_v5.cc (the loader's dlsym of "ncclTunerPlugin_v5"),
 * plugins/tuner/example/nccl/common.h (log levels and subsystem bits) and src/enqueue.cc
 * (ncclGetAlgoInfo: how getCollInfo is called). Later NCCL releases add v6/v7 tables that
 * append a getChunkSize entry or change the constants; they are not the same ABI, so only v5
 * is exported, and NCCL's loader still falls back to v5.
 *
 * Only layouts and numeric values matter for binary compatibility; the names below are ours
 * where NCCL's would clash with a program that also includes nccl.h. */
#ifndef NCCLSWEEP_NCCL_TUNER_ABI_H
#define NCCLSWEEP_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ncclResult_t: 0 is success; NCCL falls back to its own tuning when getCollInfo fails. */
typedef enum {
    nst_success = 0,
    nst_internal_error = 3,
    nst_invalid_argument = 4,
} nst_result_t;

/* ncclDebugLogLevel: the level argument of NCCL's logger. */
typedef enum {
    nst_log_none = 0,
    nst_log_version = 1,
    nst_log_warn = 2,
    nst_log_info = 3,
    nst_log_abort = 4,
    nst_log_trace = 5,
} nst_log_level_t;

/* ncclDebugLogSubSys bits: NCCL_DEBUG_SUBSYS filters INFO lines by these. */
enum {
    nst_subsys_init = 0x1,
    nst_subsys_tuning = 0x40,
    nst_subsys_env = 0x80,
};

/* ncclDebugLogger_t: printf-style logger NCCL hands to init. */
typedef void (*nst_logger_t)(nst_log_level_t level, unsigned long flags, const char* file, int line,
                             const char* format, ...);

/* ncclFunc_t: the collective of a getCollInfo call. 0..4 are the collectives NCCL tunes. */
typedef enum {
    nst_func_broadcast = 0,
    nst_func_reduce = 1,
    nst_func_all_gather = 2,
    nst_func_reduce_scatter = 3,
    nst_func_all_reduce = 4,
    nst_func_count = 5,
} nst_func_t;

/* Algorithm rows and protocol columns of the cost table (NCCL_ALGO_* / NCCL_PROTO_*). */
enum {
    nst_algo_tree = 0,
    nst_algo_ring = 1,
    nst_algo_collnet_direct = 2,
    nst_algo_collnet_chain = 3,
    nst_algo_nvls = 4,
    nst_algo_nvls_tree = 5,
    nst_algo_pat = 6,
    nst_algo_count = 7,
};
enum {
    nst_proto_ll = 0,
    nst_proto_ll128 = 1,
    nst_proto_simple = 2,
    nst_proto_count = 3,
};
/* A cost-table entry NCCL will not consider (NCCL_ALGO_PROTO_IGNORE). */
#define NST_COST_IGNORED (-1.0f)

/* ncclNvlDomainInfo_v5_t. */
typedef struct {
    int nvl_domains;
    int min_ranks_per_nvl_domain;
    int max_ranks_per_nvl_domain;
} nst_nvl_domain_info_v5_t;

/* ncclTunerConstants_v5_t: NCCL's model constants, which a tuner may edit at init. We never
 * touch them; the layout is here so the pointer type is exact. */
typedef struct {
    double base_latencies[7][3];
    double hw_latencies[3][7][3];
    double ll_max_bws[4][3];
    double per_ch_max_ring_ll128_bws[4][3];
    double per_ch_max_tree_ll128_bws[4][3];
    double per_ch_max_tree_bws[4][3];
    double per_ch_max_nvls_tree_bws[4][3];
} nst_tuner_constants_v5_t;

typedef nst_result_t (*nst_init_fn)(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                                    nst_logger_t logger, nst_nvl_domain_info_v5_t* nvl_domain_info,
                                    nst_tuner_constants_v5_t* constants);
/* cost_table is really float[num_algo][num_proto] (src/enqueue.cc passes a 2-D array cast to
 * float**); n_channels starts at 0 and NCCL keeps its own channel count while it stays 0. */
typedef nst_result_t (*nst_get_coll_info_fn)(void* context, nst_func_t coll_type, size_t n_bytes,
                                             int num_pipe_ops, float** cost_table, int num_algo,
                                             int num_proto, int reg_buff, int* n_channels);
typedef nst_result_t (*nst_finalize_fn)(void* context);
/* ncclTuner_v5_t, exported as "ncclTunerPlugin_v5". */
typedef struct {
    const char* name;
    nst_init_fn init;
    nst_get_coll_info_fn get_coll_info;
    nst_finalize_fn finalize;
} nst_tuner_v5_t;

#ifdef __cplusplus
}
#endif

#endif
