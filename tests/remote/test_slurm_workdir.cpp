// The preflight verdict on a Slurm work directory: statfs types named and classified, memory of
// this node refused, a local disk warned about, a shared filesystem recorded, and no verdict
// against a local filesystem when the partition's only node is this host.
#include "remote/slurm_workdir.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::remote;

namespace {

WorkdirFacts facts_on(FilesystemInfo fs, bool only_this_node = false) {
    WorkdirFacts facts;
    facts.root = "/scratch/me/ncclsweep";
    facts.origin = "target.workdir";
    facts.partition = "gpu";
    facts.filesystem = std::move(fs);
    facts.only_this_node = only_this_node;
    return facts;
}

}  // namespace

TEST_CASE("slurm workdir: statfs types are named and sorted by who can see them") {
    CHECK(classify_filesystem(0x01021994UL).type == "tmpfs");
    CHECK(classify_filesystem(0x01021994UL).reach == FilesystemReach::node_memory);
    CHECK(classify_filesystem(0x858458f6UL).reach == FilesystemReach::node_memory);
    CHECK(classify_filesystem(0x6969UL).type == "nfs");
    CHECK(classify_filesystem(0x6969UL).reach == FilesystemReach::shared);
    CHECK(classify_filesystem(0x0bd00bd0UL).type == "lustre");
    CHECK(classify_filesystem(0x47504653UL).type == "gpfs");
    CHECK(classify_filesystem(0xef53UL).reach == FilesystemReach::local_disk);
    CHECK(classify_filesystem(0x58465342UL).type == "xfs");
    CHECK(classify_filesystem(0x65735546UL).reach ==
          FilesystemReach::unknown);  // fuse: sshfs or a cluster fs
    CHECK(classify_filesystem(0x12345678UL).type == "0x12345678");
    CHECK(classify_filesystem(0x12345678UL).reach == FilesystemReach::unknown);
}

TEST_CASE("slurm workdir: a directory in this node's memory is refused with its path, type and the fix") {
    auto verdict = judge_workdir(facts_on({"tmpfs", FilesystemReach::node_memory}));
    REQUIRE_FALSE(verdict);
    CHECK(verdict.error().kind == ErrorKind::bad_input);
    const std::string& m = verdict.error().message;
    CHECK(m.find("/scratch/me/ncclsweep (target.workdir) is on tmpfs") != std::string::npos);
    CHECK(m.find("nodes of partition gpu cannot see") != std::string::npos);
    CHECK(m.find("Nothing was submitted") != std::string::npos);
    CHECK(m.find("set target.workdir") != std::string::npos);
}

TEST_CASE("slurm workdir: a local disk is a warning, a shared filesystem a note") {
    auto disk = judge_workdir(facts_on({"ext2/3/4", FilesystemReach::local_disk}));
    REQUIRE(disk);
    REQUIRE(disk->warnings.size() == 1);
    CHECK(disk->warnings[0].find("is on ext2/3/4, a disk of this node") != std::string::npos);
    CHECK(disk->warnings[0].find("the first task that ends stops the sweep") != std::string::npos);
    auto shared = judge_workdir(facts_on({"nfs", FilesystemReach::shared}));
    REQUIRE(shared);
    CHECK(shared->warnings.empty());
    REQUIRE(shared->notes.size() == 1);
    CHECK(shared->notes[0].find("is on nfs, a filesystem nodes share") != std::string::npos);
    auto unknown = judge_workdir(facts_on({"fuse", FilesystemReach::unknown}));
    REQUIRE(unknown);
    CHECK(unknown->warnings.empty());
}

TEST_CASE("slurm workdir: when the partition's only node is this host a local filesystem is fine") {
    for (auto reach : {FilesystemReach::node_memory, FilesystemReach::local_disk}) {
        auto verdict = judge_workdir(facts_on({"tmpfs", reach}, true));
        REQUIRE(verdict);
        CHECK(verdict->warnings.empty());
        REQUIRE(verdict->notes.size() == 1);
        CHECK(verdict->notes[0].find("the only node of partition gpu is this host") != std::string::npos);
    }
}

TEST_CASE("slurm workdir: statfs of a real directory answers and a missing one is an error naming it") {
    test::TempDir dir;
    auto here = filesystem_of(dir.path().string());
    REQUIRE(here);
    CHECK(!here->type.empty());
    auto missing = filesystem_of((dir.path() / "no" / "such").string());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::infrastructure);
    CHECK(missing.error().message.find((dir.path() / "no" / "such").string()) != std::string::npos);
}
