#pragma once
// Is a Slurm sweep's work directory somewhere the compute nodes see? Before the sweep, a cheap
// look from the login node at the filesystem under the work directory root (statfs): one in
// this node's memory (tmpfs, ramfs) is refused, a disk of this node is warned about, unless
// the partition's only node is this host. The proof comes later, from the first task that
// ends (SlurmTaskProcess: Slurm says it ran, yet nothing it wrote is here). docs/targets.md.
#include <string>

#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::remote {

/// Where a filesystem's files can be seen from.
enum class FilesystemReach {
    shared,       ///< a network or cluster filesystem (nfs, lustre, gpfs, cephfs, beegfs, cifs, ...)
    local_disk,   ///< a disk of this node (ext2/3/4, xfs, btrfs, zfs, overlay, ...)
    node_memory,  ///< this node's memory (tmpfs, ramfs): no other node can see it
    unknown,      ///< fuse, 9p or a type it does not know: could be either
};

/// A filesystem as statfs names it.
struct FilesystemInfo {
    std::string type;  ///< "nfs", "tmpfs", "ext2/3/4", ... or the magic number ("0x65735546")
    FilesystemReach reach = FilesystemReach::unknown;
};

/// The name and reach of a statfs f_type.
[[nodiscard]] FilesystemInfo classify_filesystem(unsigned long magic);

/// statfs of `path`; infrastructure error (naming the path) when it fails.
Result<FilesystemInfo> filesystem_of(const std::string& path);

/// What judge_workdir needs to know.
struct WorkdirFacts {
    std::string root;    ///< absolute path of the work directory root
    std::string origin;  ///< how it was chosen: "target.workdir" or "the default ./.ncclsweep/work"
    std::string partition;
    FilesystemInfo filesystem;
    bool only_this_node = false;  ///< the partition's only node is the host ncclsweep runs on
};

/// The preflight verdict on a work directory: bad_input for memory of this node (tmpfs,
/// ramfs); a warning for a local disk; notes otherwise. No verdict against a local filesystem
/// when the partition's only node is this host.
Result<TargetFindings> judge_workdir(const WorkdirFacts& facts);

}  // namespace ncclsweep::remote
