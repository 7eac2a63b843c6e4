/* Parser of the tuner profile (profile.h). Strict: anything unexpected rejects the whole file,
 * because a half-read profile would apply settings nobody measured. */
#include "tuner/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuner/nccl_tuner_abi.h"

/* Profile spellings, indexed like the cost table and nst_func_t. */
static const char* const k_collectives[nst_func_count] = {"broadcast", "reduce", "allgather", "reducescatter",
                                                          "allreduce"};
static const char* const k_algorithms[nst_algo_count] = {
    "tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
static const char* const k_protocols[nst_proto_count] = {"ll", "ll128", "simple"};
/* NCCL's spellings in its log lines. */
static const char* const k_func_names[nst_func_count] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                         "AllReduce"};
static const char* const k_algo_names[nst_algo_count] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char* const k_proto_names[nst_proto_count] = {"LL", "LL128", "SIMPLE"};

enum { k_fields = 8 };

static void set_error(char* error, size_t size, const char* format, ...) {
    if (error == NULL || size == 0) return;
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}

static int index_of(const char* token, const char* const* names, int count) {
    for (int i = 0; i < count; ++i)
        if (strcasecmp(token, names[i]) == 0) return i;
    return -1;
}

/* A whole unsigned decimal number within [low, high]; 0 when it is not one. */
static int parse_unsigned(const char* token, uint64_t low, uint64_t high, uint64_t* out) {
    if (token[0] < '0' || token[0] > '9') return 0;
    errno = 0;
    char* end = NULL;
    unsigned long long value = strtoull(token, &end, 10);
    if (errno != 0 || end == token || *end != '\0' || value < low || value > high) return 0;
    *out = (uint64_t)value;
    return 1;
}

/* Splits `line` in place at spaces/tabs; returns the number of fields (at most max + 1). */
static int split_fields(char* line, char** fields, int max) {
    int count = 0;
    char* p = line;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t') ++p;
        if (*p == '\0') break;
        if (count <= max) fields[count] = p;
        ++count;
        while (*p != '\0' && *p != ' ' && *p != '\t') ++p;
        if (*p != '\0') *p++ = '\0';
    }
    return count;
}

static int parse_rule(char** f, int line, nst_rule_t* rule, char* error, size_t error_size) {
    uint64_t number = 0;
    rule->line = line;
    if ((rule->func = index_of(f[0], k_collectives, nst_func_count)) < 0) {
        set_error(error, error_size,
                  "line %d: unknown collective '%.40s' (accepted: broadcast reduce allgather reducescatter "
                  "allreduce)",
                  line, f[0]);
        return -1;
    }
    if (!parse_unsigned(f[1], 0, UINT64_MAX, &rule->min_bytes) ||
        !parse_unsigned(f[2], 0, UINT64_MAX, &rule->max_bytes) || rule->min_bytes > rule->max_bytes) {
        set_error(error, error_size, "line %d: byte range '%.30s %.30s' is not two whole numbers min <= max",
                  line, f[1], f[2]);
        return -1;
    }
    if (!parse_unsigned(f[3], 1, 1u << 24, &number)) {
        set_error(error, error_size, "line %d: nranks '%.30s' is not a whole number >= 1", line, f[3]);
        return -1;
    }
    rule->n_ranks = (int)number;
    if (!parse_unsigned(f[4], 1, 1u << 24, &number)) {
        set_error(error, error_size, "line %d: nnodes '%.30s' is not a whole number >= 1", line, f[4]);
        return -1;
    }
    rule->n_nodes = (int)number;
    if ((rule->algo = index_of(f[5], k_algorithms, nst_algo_count)) < 0) {
        set_error(error, error_size,
                  "line %d: unknown algorithm '%.40s' (accepted: tree ring collnetdirect collnetchain nvls "
                  "nvlstree pat)",
                  line, f[5]);
        return -1;
    }
    if ((rule->proto = index_of(f[6], k_protocols, nst_proto_count)) < 0) {
        set_error(error, error_size, "line %d: unknown protocol '%.40s' (accepted: ll ll128 simple)", line,
                  f[6]);
        return -1;
    }
    if (!parse_unsigned(f[7], 0, NST_MAX_CHANNELS, &number)) {
        set_error(error, error_size, "line %d: channels '%.30s' is not a whole number 0..%d (0 = NCCL's own)",
                  line, f[7], NST_MAX_CHANNELS);
        return -1;
    }
    rule->channels = (int)number;
    return 0;
}

int nst_profile_parse(const char* text, size_t size, nst_profile_t* out, char* error, size_t error_size) {
    char buffer[NST_MAX_LINE_CHARS + 2];
    int line = 0;
    int seen_version = 0;
    size_t pos = 0;
    out->count = 0;
    if (text == NULL) size = 0;
    while (pos < size) {
        size_t end = pos;
        while (end < size && text[end] != '\n') ++end;
        size_t length = end - pos;
        ++line;
        if (length > NST_MAX_LINE_CHARS) {
            set_error(error, error_size, "line %d: longer than %d characters", line, NST_MAX_LINE_CHARS);
            out->count = 0;
            return -1;
        }
        memcpy(buffer, text + pos, length);
        buffer[length] = '\0';
        pos = end + 1;
        if (length > 0 && buffer[length - 1] == '\r') buffer[--length] = '\0';
        for (size_t i = 0; i < length; ++i) {
            unsigned char c = (unsigned char)buffer[i];
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                set_error(error, error_size, "line %d: control byte 0x%02x (not a text file?)", line, c);
                out->count = 0;
                return -1;
            }
        }
        char* fields[k_fields + 1];
        int count = split_fields(buffer, fields, k_fields);
        if (count == 0 || fields[0][0] == '#') continue;
        if (!seen_version) {
            if (count != 2 || strcmp(fields[0], "ncclsweep-tuner-profile") != 0 ||
                strcmp(fields[1], "1") != 0) {
                set_error(error, error_size,
                          "line %d: expected the version line '" NST_PROFILE_VERSION_LINE
                          "' first (write the file with ncclsweep export --format tuner-profile)",
                          line);
                out->count = 0;
                return -1;
            }
            seen_version = 1;
            continue;
        }
        if (count != k_fields) {
            set_error(
                error, error_size,
                "line %d: %d fields, expected 8: collective min_bytes max_bytes nranks nnodes algorithm "
                "protocol channels",
                line, count);
            out->count = 0;
            return -1;
        }
        if (out->count == NST_MAX_RULES) {
            set_error(error, error_size, "line %d: more than %d rules", line, NST_MAX_RULES);
            out->count = 0;
            return -1;
        }
        if (parse_rule(fields, line, &out->rules[out->count], error, error_size) != 0) {
            out->count = 0;
            return -1;
        }
        ++out->count;
    }
    if (!seen_version) {
        set_error(error, error_size,
                  "no version line '" NST_PROFILE_VERSION_LINE
                  "' (empty file, or not a profile written by ncclsweep export "
                  "--format tuner-profile)");
        return -1;
    }
    return 0;
}

int nst_profile_load(const char* path, nst_profile_t* out, char* error, size_t error_size) {
    out->count = 0;
    /* O_NONBLOCK: a FIFO (or a device) named as the profile must not hang NCCL's init waiting
       for a writer; only a regular file is read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        set_error(error, error_size, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        set_error(error, error_size, "not a regular file (a FIFO, a device or a directory is not read)");
        return -1;
    }
    /* A regular file never blocks; reads go on without O_NONBLOCK's EAGAIN surprises. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    FILE* file = fdopen(fd, "rb");
    if (file == NULL) {
        close(fd);
        set_error(error, error_size, "cannot open it: %s", strerror(errno));
        return -1;
    }
    char* text = (char*)malloc(NST_MAX_PROFILE_BYTES + 1);
    if (text == NULL) {
        fclose(file);
        set_error(error, error_size, "out of memory reading it");
        return -1;
    }
    size_t size = fread(text, 1, NST_MAX_PROFILE_BYTES + 1, file);
    int failed = ferror(file);
    fclose(file);
    int rc = -1;
    if (failed)
        set_error(error, error_size, "cannot read it (is it a directory?)");
    else if (size > NST_MAX_PROFILE_BYTES)
        set_error(error, error_size, "larger than %d bytes", NST_MAX_PROFILE_BYTES);
    else
        rc = nst_profile_parse(text, size, out, error, error_size);
    free(text);
    return rc;
}

const nst_rule_t* nst_profile_match(const nst_profile_t* profile, int func, uint64_t n_bytes, size_t n_ranks,
                                    size_t n_nodes) {
    for (int i = 0; i < profile->count; ++i) {
        const nst_rule_t* rule = &profile->rules[i];
        if (rule->func == func && rule->min_bytes <= n_bytes && n_bytes <= rule->max_bytes &&
            (size_t)rule->n_ranks == n_ranks && (size_t)rule->n_nodes == n_nodes)
            return rule;
    }
    return NULL;
}

const char* nst_func_name(int func) {
    return func >= 0 && func < nst_func_count ? k_func_names[func] : "?";
}
const char* nst_algo_name(int algo) {
    return algo >= 0 && algo < nst_algo_count ? k_algo_names[algo] : "?";
}
const char* nst_proto_name(int proto) {
    return proto >= 0 && proto < nst_proto_count ? k_proto_names[proto] : "?";
}
