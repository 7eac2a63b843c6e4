#include "remote/slurm_workdir.hpp"

#include <sys/vfs.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace ncclsweep::remote {
namespace {

struct KnownFilesystem {
    unsigned long magic;
    const char* type;
    FilesystemReach reach;
};

// f_type values from <linux/magic.h> and the filesystems' own sources (Lustre, GPFS, BeeGFS,
// Panasas, ZFS are not in the kernel's header).
constexpr std::array<KnownFilesystem, 22> k_filesystems = {{
    {0x01021994UL, "tmpfs", FilesystemReach::node_memory},
    {0x858458f6UL, "ramfs", FilesystemReach::node_memory},
    {0x6969UL, "nfs", FilesystemReach::shared},
    {0xff534d42UL, "cifs", FilesystemReach::shared},
    {0xfe534d42UL, "smb2", FilesystemReach::shared},
    {0x517bUL, "smb", FilesystemReach::shared},
    {0x0bd00bd0UL, "lustre", FilesystemReach::shared},
    {0x47504653UL, "gpfs", FilesystemReach::shared},
    {0x00c36400UL, "ceph", FilesystemReach::shared},
    {0x19830326UL, "beegfs", FilesystemReach::shared},
    {0xaad7aaeaUL, "panfs", FilesystemReach::shared},
    {0x5346414fUL, "afs", FilesystemReach::shared},
    {0x6b414653UL, "afs", FilesystemReach::shared},
    {0xef53UL, "ext2/3/4", FilesystemReach::local_disk},
    {0x58465342UL, "xfs", FilesystemReach::local_disk},
    {0x9123683eUL, "btrfs", FilesystemReach::local_disk},
    {0xf2f52010UL, "f2fs", FilesystemReach::local_disk},
    {0x2fc12fc1UL, "zfs", FilesystemReach::local_disk},
    {0x794c7630UL, "overlay", FilesystemReach::local_disk},
    {0x65735546UL, "fuse", FilesystemReach::unknown},
    {0x01021997UL, "9p", FilesystemReach::unknown},
    {0x73717368UL, "squashfs", FilesystemReach::local_disk},
}};

}  // namespace

FilesystemInfo classify_filesystem(unsigned long magic) {
    for (const auto& known : k_filesystems)
        if (known.magic == magic) return FilesystemInfo{known.type, known.reach};
    return FilesystemInfo{fmt::format("{:#x}", magic), FilesystemReach::unknown};
}

Result<FilesystemInfo> filesystem_of(const std::string& path) {
    struct statfs info {};
    if (::statfs(path.c_str(), &info) != 0)
        return Error::infrastructure(
            fmt::format("slurm: cannot read the filesystem of '{}': {}", path, std::strerror(errno)));
    return classify_filesystem(static_cast<unsigned long>(info.f_type));
}

Result<TargetFindings> judge_workdir(const WorkdirFacts& facts) {
    TargetFindings findings;
    const FilesystemInfo& fs = facts.filesystem;
    const std::string where = fmt::format("the work directory root {} ({})", facts.root, facts.origin);
    const std::string fix =
        "set target.workdir to a directory on a filesystem the login and compute nodes share (under your "
        "home "
        "or a /shared, /scratch or /lustre mount; `df -T DIR` shows its type: nfs, lustre, gpfs, cephfs, "
        "beegfs, ...)";
    if (facts.only_this_node && fs.reach != FilesystemReach::shared) {
        findings.notes.push_back(
            fmt::format("slurm: {} is on {}; the only node of partition {} is this host, so its "
                        "tasks see it",
                        where, fs.type, facts.partition));
        return findings;
    }
    switch (fs.reach) {
        case FilesystemReach::shared:
            findings.notes.push_back(
                fmt::format("slurm: {} is on {}, a filesystem nodes share", where, fs.type));
            break;
        case FilesystemReach::node_memory:
            return Error::bad_input(
                fmt::format("slurm: {} is on {}, which lives in this node's memory: the nodes of partition "
                            "{} cannot see the task "
                            "scripts written there, nor this node the output their tasks write. Nothing was "
                            "submitted; {}",
                            where, fs.type, facts.partition, fix));
        case FilesystemReach::local_disk:
            findings.warnings.push_back(fmt::format(
                "slurm: {} is on {}, a disk of this node: unless it is exported to the nodes of partition "
                "{}, their "
                "tasks cannot see it, and the first task that ends stops the sweep. If it is not shared, {}",
                where, fs.type, facts.partition, fix));
            break;
        case FilesystemReach::unknown:
            findings.notes.push_back(
                fmt::format("slurm: {} is on {}; whether the nodes share it shows when the first "
                            "task ends",
                            where, fs.type));
            break;
    }
    return findings;
}

}  // namespace ncclsweep::remote
