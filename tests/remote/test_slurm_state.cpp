// The parsers of Slurm's output, fed what a real Slurm printed (tests/fixtures/slurm/README.md
// says which command and version).
#include "remote/slurm_state.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::remote;
using ncclsweep::test::read_file;
using ncclsweep::test::source_path;

TEST_CASE("slurm: squeue of a throttled array lists every task with its state and reason") {
    auto tasks = parse_squeue(read_file(source_path("tests/fixtures/slurm/squeue-array-throttled.txt")));
    REQUIRE(tasks.size() == 5);
    CHECK(tasks.at("12_0").state == "RUNNING");
    CHECK(tasks.at("12_2").state == "PENDING");
    CHECK(tasks.at("12_2").reason == "JobArrayTaskLimit");
    CHECK(is_live_state(tasks.at("12_4").state));
    CHECK(tasks.count("7_0") == 0);  // ended: no longer listed
}

TEST_CASE("slurm: squeue lines that are not three fields are skipped") {
    auto tasks = parse_squeue("slurm_load_jobs error: Invalid job id specified\n\n4_1|RUNNING|None\n|x|y\n");
    REQUIRE(tasks.size() == 1);
    CHECK(tasks.at("4_1").state == "RUNNING");
}

TEST_CASE("slurm: scontrol show job of an ended array gives each task's state and exit") {
    auto tasks =
        parse_scontrol_jobs(read_file(source_path("tests/fixtures/slurm/scontrol-oneliner-array.txt")));
    REQUIRE(tasks.size() == 5);
    CHECK(tasks.at("7_0").state == "COMPLETED");
    CHECK(verdict_of(tasks.at("7_0")) == TaskVerdict::exited);
    CHECK(tasks.at("7_1").exit.exit_code == 3);
    CHECK(verdict_of(tasks.at("7_1")) == TaskVerdict::exited);
    CHECK(tasks.at("7_2").state == "TIMEOUT");
    CHECK(tasks.at("7_2").reason == "TimeLimit");
    CHECK(verdict_of(tasks.at("7_2")) == TaskVerdict::time_limit);
    CHECK(verdict_of(tasks.at("7_3")) == TaskVerdict::cancelled);
    CHECK(tasks.at("7_4").exit.signal == 11);
    CHECK(tasks.at("7_0").node == "vm");  // NodeList=, not ReqNodeList=(null) before it
}

TEST_CASE("slurm: sacct's NodeList column names the node, 'None assigned' none") {
    auto tasks =
        parse_sacct("7_0|COMPLETED|0:0|gpu01\n7_1|CANCELLED by 0|0:15|None assigned\n7_2|FAILED|0:53\n");
    CHECK(tasks.at("7_0").node == "gpu01");
    CHECK(tasks.at("7_1").node.empty());
    CHECK(tasks.at("7_1").state == "CANCELLED");
    CHECK(tasks.at("7_2").node.empty());
    CHECK(tasks.at("7_2").exit.signal == 53);
}

TEST_CASE("slurm: sacct states and exit codes and the infrastructure verdicts") {
    auto tasks = parse_sacct(read_file(source_path("tests/fixtures/slurm/sacct-parsable.txt")));
    CHECK(tasks.at("7_1").exit.exit_code == 3);
    CHECK(tasks.at("7_3").state == "CANCELLED");  // "CANCELLED by 0"
    CHECK(verdict_of(tasks.at("7_2")) == TaskVerdict::time_limit);
    CHECK(verdict_of(tasks.at("8_0")) == TaskVerdict::infrastructure);
    CHECK(verdict_of(tasks.at("9_0")) == TaskVerdict::infrastructure);
    CHECK(verdict_of(TaskFinal{"BOOT_FAIL", "", {}, ""}) == TaskVerdict::infrastructure);
    CHECK(verdict_of(TaskFinal{"OUT_OF_MEMORY", "", {}, ""}) == TaskVerdict::out_of_memory);
    CHECK(is_live_state(tasks.at("9_1").state));
}

TEST_CASE("slurm: sbatch --parsable output is a job id or an error") {
    CHECK(*parse_sbatch_job_id("4242\n") == "4242");
    CHECK(*parse_sbatch_job_id("4242;cluster\n") == "4242");
    CHECK(!parse_sbatch_job_id("sbatch: error: Batch job submission failed"));
    CHECK(!parse_sbatch_job_id(""));
}
