#include "remote/preflight.hpp"

#include <cstdio>
#include <cstdlib>

#include "remote/local_target.hpp"
#include "remote/target_factory.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace std::chrono_literals;

namespace {

/// Puts a directory first on this process's PATH for the scope (LocalTarget inherits it).
struct PathPrefix {
    std::string old;
    explicit PathPrefix(const std::string& dir) : old(std::getenv("PATH") ? std::getenv("PATH") : "") {
        ::setenv("PATH", (dir + ":" + old).c_str(), 1);
    }
    ~PathPrefix() { ::setenv("PATH", old.c_str(), 1); }
};

}  // namespace

TEST_CASE("preflight parses GPUs, busy processes, NCCL and conf files", "[remote][preflight]") {
    const std::string m = "@@ncclsweep-preflight:";
    const std::string probe =
        m + "gpus\nNVIDIA H200, 550.54.15, 1 MiB\nNVIDIA H200, 550.54.15, 70000 MiB\n" + m + "apps\n" +
        "4242, python3, 69000 MiB\n" + m + "libnccl\n/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5\n" + m +
        "torch\n" + m + "etc_nccl_conf\nNCCL_P2P_LEVEL=NVL\n\n" + m + "home_nccl_conf\n\n" + m + "end\n";
    const auto p = remote::parse_preflight(probe, "ssh://u@h:22");
    REQUIRE(p.gpus.size() == 2);
    CHECK(p.gpus[1].memory_used == "70000 MiB");
    CHECK(p.driver == "550.54.15");
    REQUIRE(p.busy.size() == 1);
    CHECK(p.busy[0].pid == 4242);
    CHECK(p.nccl_version == "2.21.5");
    CHECK(p.etc_nccl_conf == "NCCL_P2P_LEVEL=NVL\n");
    CHECK(p.home_nccl_conf.empty());
    const auto json = p.to_json();
    CHECK(json["gpu_count"] == 2);
    CHECK(json["busy"][0]["pid"] == 4242);
    auto refused = remote::check_gpus_idle(p, remote::BusyPolicy::refuse);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::infrastructure);
    CHECK(refused.error().message.find("pid 4242") != std::string::npos);
    CHECK(refused.error().message.find("--force") != std::string::npos);
    CHECK(remote::check_gpus_idle(p, remote::BusyPolicy::force).ok());
}

TEST_CASE("preflight on a host without nvidia-smi: zero GPUs and a note", "[remote][preflight]") {
    test::TempDir dir;
    dir.write("bin/.keep", "");
    PathPrefix path((dir.path() / "bin").string());
    remote::LocalTarget target;
    if (test::run_command({"sh", "-c", "command -v nvidia-smi"}).exit_code == 0) {
        test::skip_test("no-nvidia-smi",
                        "this host has nvidia-smi, so a host without it cannot be shown here");
        return;
    }
    auto p = remote::run_preflight(target);
    REQUIRE(p.ok());
    CHECK_FALSE(p->has_nvidia_smi);
    CHECK(p->gpus.empty());
    CHECK(p->to_json()["gpu_count"] == 0);
    bool noted = false;
    for (const auto& note : p->notes) noted |= note.find("nvidia-smi not found") != std::string::npos;
    CHECK(noted);
    auto released = remote::verify_gpus_released(target, {12345});
    REQUIRE(released.ok());
    CHECK(released->find("not checked") != std::string::npos);
}

TEST_CASE("preflight with a fake nvidia-smi finds busy GPUs and our leftover processes",
          "[remote][preflight]") {
    test::TempDir dir;
    remote::LocalTarget target;
    // A leftover "GPU process" of ours: its own process group, listed by the fake nvidia-smi.
    Command command;
    command.argv = {"sleep", "30"};
    auto ours = target.start(command);
    REQUIRE(ours.ok());
    const long pgid = *(*ours)->process_group();
    const auto fake = dir.write("bin/nvidia-smi",
                                "#!/bin/sh\ncase \"$1\" in\n"
                                "--query-gpu=*) echo 'NVIDIA H200, 550.54.15, 1 MiB' ;;\n"
                                "--query-compute-apps=pid,*) echo '" +
                                    std::to_string(pgid) +
                                    ", sleep, 10 MiB' ;;\n"
                                    "--query-compute-apps=pid) echo '" +
                                    std::to_string(pgid) + "' ;;\nesac\n");
    std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
    PathPrefix path((dir.path() / "bin").string());
    auto p = remote::run_preflight(target);
    REQUIRE(p.ok());
    CHECK(p->has_nvidia_smi);
    REQUIRE(p->gpus.size() == 1);
    CHECK(p->gpus[0].name == "NVIDIA H200");
    REQUIRE(p->busy.size() == 1);
    CHECK(p->busy[0].pid == pgid);
    auto held = remote::verify_gpus_released(target, {pgid});
    REQUIRE_FALSE(held.ok());
    CHECK(held.error().message.find(std::to_string(pgid)) != std::string::npos);
    auto other = remote::verify_gpus_released(target, {pgid + 100000});
    REQUIRE(other.ok());
    CHECK(other->empty());
    (*ours)->kill(100ms);
}

TEST_CASE("preflight times a command start and warns when the host's shell start-up makes it slow",
          "[remote][preflight]") {
    remote::LocalTarget target;
    auto fast = remote::run_preflight(target);
    REQUIRE(fast.ok());
    CHECK(fast->command_start_s >= 0);
    CHECK(fast->to_json()["command_start_s"] == fast->command_start_s);
    // Consistent with the threshold whatever this machine's load: a warning exactly when slow.
    CHECK(fast->warnings.empty() == (fast->command_start_s <= remote::k_slow_command_start_s));

    // A host where starting anything costs 0.7 s (as a heavy ~/.bashrc does over ssh): here a
    // `true` first on PATH that takes that long.
    test::TempDir dir;
    const auto slow = dir.write("bin/true", "#!/bin/sh\nsleep 0.7\n");
    std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
    PathPrefix path((dir.path() / "bin").string());
    auto p = remote::run_preflight(target);
    REQUIRE(p.ok());
    CHECK(p->command_start_s >= 0.7);
    REQUIRE(p->warnings.size() == 1);
    // The measured time, whatever this machine's load made it (0.7 s or more).
    char measured[64];
    std::snprintf(measured, sizeof measured, "starting a command takes %.2f s", p->command_start_s);
    CHECK(p->warnings[0].find(measured) != std::string::npos);
    CHECK(p->warnings[0].find("~/.bashrc") != std::string::npos);
    CHECK(p->to_json()["warnings"].size() == 1);
}

TEST_CASE("make_target builds local targets and rejects bad URLs with the spec location",
          "[remote][factory]") {
    TargetSpec spec;
    spec.url = "local";
    auto local = remote::make_target(spec);
    REQUIRE(local.ok());
    CHECK((*local)->describe() == "local");
    spec.url = "gopher://x";
    spec.mark = {"spec.yaml", 3, 9};
    auto bad = remote::make_target(spec);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().kind == ErrorKind::bad_input);
    CHECK(bad.error().message.find("spec.yaml:3:9") != std::string::npos);
    remote::TargetOverrides overrides;
    overrides.url = "local";
    CHECK(remote::make_target(spec, overrides).ok());
}
