// Spec parser: values kept as text, sections, and every error located exactly (file:line:col).
#include <string>

#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

/// The error message of parsing + validating `text` as "spec.yaml" ("" when it is accepted).
std::string error_of(const std::string& text) {
    auto spec = parse_spec(text, "spec.yaml");
    if (!spec) {
        CHECK(spec.error().kind == ErrorKind::bad_input);
        return spec.error().message;
    }
    auto ok = validate_spec(*spec);
    if (!ok) {
        CHECK(ok.error().kind == ErrorKind::bad_input);
        return ok.error().message;
    }
    return {};
}

const char* k_minimal = "sweep: s\nworkload: {engine: tpverify, args: {backend: sim}}\n";

}  // namespace

TEST_CASE("parser keeps values as written text and sections in file order") {
    auto spec = parse_spec(R"(sweep: pcie-study
target: ssh://me@gpu-box:2222
workload:
  engine: tpverify
  args:
    backend: sim
    iters: 1e3
    graph: on
env:
  NCCL_DEBUG: INFO
  NCCL_BUFFSIZE: 0x10
axes:
  NCCL_PROTO: [LL, Simple]
  tokens: ["004", 8]
  fusion: [off, on]
repeats: 3
timeouts: {startup: 90, capture: 2m, stall: 30s, total: 1h}
)",
                           "dir/spec.yaml");
    REQUIRE(spec.ok());
    CHECK(spec->name == "pcie-study");
    CHECK(spec->target.url == "ssh://me@gpu-box:2222");
    CHECK(spec->workload.engine == "tpverify");
    REQUIRE(spec->workload.args.size() == 3);
    CHECK(spec->workload.args[1].second.text == "1e3");
    CHECK(spec->workload.args[2].second.text == "on");
    CHECK(spec->env[1].second.text == "0x10");
    REQUIRE(spec->axes.size() == 3);
    CHECK(spec->axes[0].name == "NCCL_PROTO");
    CHECK(spec->axes[0].is_env());
    CHECK_FALSE(spec->axes[1].is_env());
    CHECK(spec->axes[1].values[0].text == "004");
    CHECK(spec->axes[1].values[0].mark.to_string() == "dir/spec.yaml:14:12");
    CHECK(spec->axes[2].values[1].text == "on");
    CHECK(spec->repeats == 3);
    CHECK(spec->timeouts.startup == 90);
    CHECK(spec->timeouts.capture == 120);
    CHECK(spec->timeouts.stall == 30);
    CHECK(spec->timeouts.total == 3600);
    CHECK(validate_spec(*spec).ok());
}

TEST_CASE("parser reads the target map and command workloads") {
    auto spec = parse_spec(R"(target:
  url: ssh://gpu-box
  env_delivery: env
  identity_file: ~/.ssh/id_ed25519
  accept_new_host_key: yes
workload:
  command: [python3, -m, sglang.launch_server, --tp, "{tp}"]
  client: "curl -s localhost:30000/health"
  ready: "fired up and ready to roll"
  metrics: {tok_s: 'gen throughput \(token/s\): ([0-9.]+)'}
  rules:
    - {name: my-oom, regex: "out of memory", class: oom}
    - {name: slow, regex: "slow", fatal: false}
axes: {tp: [8]}
)",
                           "x.yaml");
    REQUIRE(spec.ok());
    CHECK(spec->name == "x");
    CHECK(spec->target.env_delivery == EnvDelivery::env);
    CHECK(spec->target.accept_new_host_key);
    CHECK(spec->target.identity_file.value_or("") == "~/.ssh/id_ed25519");
    CHECK(spec->workload.command.size() == 5);
    CHECK_FALSE(spec->workload.command_is_shell);
    CHECK(spec->workload.client_is_shell);
    CHECK(spec->workload.metrics.size() == 1);
    REQUIRE(spec->workload.rules.size() == 2);
    CHECK(spec->workload.rules[0].failure_class == "oom");
    CHECK_FALSE(spec->workload.rules[1].fatal);
    CHECK(validate_spec(*spec).ok());
}

TEST_CASE("hostile values are data and survive parsing exactly") {
    auto spec = parse_spec(
        "workload: {engine: tpverify}\nenv:\n  X_QUOTE: \"it's \\\"q\\\" $(rm -rf /) `id`\\nnext\"\n"
        "axes:\n  label: [\"ünï 😀\", '; echo pwned']\n",
        "h.yaml");
    REQUIRE(spec.ok());
    CHECK(spec->env[0].second.text == "it's \"q\" $(rm -rf /) `id`\nnext");
    CHECK(spec->axes[0].values[0].text == "ünï 😀");
    CHECK(spec->axes[0].values[1].text == "; echo pwned");
}

TEST_CASE("parser errors name file, line and column") {
    std::string m = k_minimal;
    CHECK(error_of(m + "axis:\n  NCCL_PROTO: [LL]\n") ==
          "spec.yaml:3:1: unknown key 'axis' in the top level of the spec; did you mean 'axes'?");
    CHECK(error_of(m + "axes:\n  NCCL_PROTO: LL\n") ==
          "spec.yaml:4:15: axes.NCCL_PROTO must be a list of values, e.g. [a, b]");
    CHECK(error_of(m + "repeats: 0\n") ==
          "spec.yaml:3:10: repeats must be a whole number from 1 to 1000 or `auto` (the repeats a nightly "
          "gate needs, from the previous sweep's noise), not '0'");
    CHECK(error_of(m + "axes:\n  tokens: [1, [2]]\n") ==
          "spec.yaml:4:15: axes.tokens[1] must be a single value, but it is a list");
    CHECK(error_of(m + "env:\n  NCCL_ALGO:\n") ==
          "spec.yaml:4:3: env.NCCL_ALGO has no value; write one (use \"\" for an empty string)");
    CHECK(error_of(m + "timeouts: {stall: soon}\n") ==
          "spec.yaml:3:19: timeouts.stall must be a duration in seconds such as 90, 90s, 20m or 1h (0 = no "
          "limit), "
          "not 'soon'");
    CHECK(error_of(m + "timeouts: {stal: 3}\n") ==
          "spec.yaml:3:12: unknown key 'stal' in timeouts; did you mean 'stall'?");
    CHECK(error_of(m + "env: {A: 1, A: 2}\n") ==
          "spec.yaml:3:13: 'A' appears twice in env; keep one of them");
    CHECK(error_of("sweep: s\nworkload: {engine: tpverify\n").rfind("spec.yaml:3:1: YAML syntax error:", 0) ==
          0);
    CHECK(error_of("sweep: s\n") ==
          "spec.yaml: the spec has no `workload:`; add `workload: {engine: tpverify, args: {backend: sim}}` "
          "or a "
          "`command:`");
    CHECK(error_of("") == "spec.yaml: the spec is empty; start from experiments/quickstart.yaml");
    CHECK(error_of("- a\n- b\n").rfind("spec.yaml:1:1: the top level of the spec must be a map", 0) == 0);
}

TEST_CASE("target and workload errors are located") {
    CHECK(error_of("target: sshh://box\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:9: target 'sshh://box' is neither local nor an ssh:// URL; write `local`, "
          "`ssh://user@host[:port]` or `slurm://PARTITION`");
    CHECK(error_of("target: {url: 'ssh://u@box:99999'}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:15: target 'ssh://u@box:99999' has a port that is not a number from 1 to 65535; write "
          "`local`, `ssh://user@host[:port]` or `slurm://PARTITION`");
    CHECK(error_of("target: {url: local, env_delivery: file}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:36: target.env_delivery 'file' is not known; use sitecustomize, env or both");
    CHECK(error_of("workload:\n  engine: tpverify\n  command: [x]\n") ==
          "spec.yaml:2:3: workload has both `engine:` and `command:`; keep one of them");
    CHECK(error_of("workload:\n  engine: vllm\n") ==
          "spec.yaml:2:11: workload.engine 'vllm' is not known; the only engine is tpverify (use `command:` "
          "for "
          "anything else)");
    CHECK(
        error_of("workload:\n  command: server\n  metrics: {tok_s: 'tok/s: [0-9.]+'}\n") ==
        "spec.yaml:3:20: workload.metrics.tok_s must have exactly 1 capturing group(s) (it has 0); wrap the "
        "number in ( ) and use (?: ) for other groups");
    CHECK(error_of("workload:\n  command: server\n  ready: 'ready ('\n")
              .rfind("spec.yaml:3:10: workload.ready is not a valid regular expression (RE2 syntax): ", 0) ==
          0);
    CHECK(
        error_of("workload:\n  engine: tpverify\n  ready: x\n") ==
        "spec.yaml:3:3: workload.ready only applies to `command:` workloads; tpverify reports readiness and "
        "results itself, so remove it");
    CHECK(error_of("workload:\n  engine: tpverify\n  rules: [{name: a, regex: b, fatl: false}]\n") ==
          "spec.yaml:3:31: unknown key 'fatl' in workload.rules[0]; did you mean 'fatal'?");
}

TEST_CASE("semantic errors are located at the offending value") {
    std::string m = k_minimal;
    CHECK(error_of(m + "axes:\n  Nccl_Algo: [ring]\n") ==
          "spec.yaml:4:3: axis 'Nccl_Algo' mixes upper and lower case; write environment variables in "
          "UPPER_CASE "
          "and workload parameters in lower_case");
    CHECK(
        error_of(m + "axes:\n  9lives: [1]\n").rfind("spec.yaml:4:3: axis '9lives' is not a valid name", 0) ==
        0);
    CHECK(error_of(m + "axes:\n  NCCL_PROTO: [LL, Simple, LL]\n") ==
          "spec.yaml:4:28: axis NCCL_PROTO lists 'LL' twice; each value once");
    std::string nthreads = error_of(m + "axes:\n  NCCL_NTHREADS: [64, 100]\n");
    CHECK(nthreads.rfind("spec.yaml:4:23: ", 0) == 0);
    CHECK(nthreads.find("NCCL_NTHREADS") != std::string::npos);
    CHECK(error_of(m + "env: {NCCL_PROTO: LL}\naxes:\n  NCCL_PROTO: [LL, Simple]\n") ==
          "spec.yaml:5:3: NCCL_PROTO is both an axis and a fixed value in env: (spec.yaml:3:19); remove one "
          "of them");
    CHECK(error_of(m + "axes:\n  tokens: [4, four]\n") ==
          "spec.yaml:4:15: tokens=four must be a positive whole number");
}

TEST_CASE("zip, exclude and include are checked against the axes") {
    std::string m = std::string(k_minimal) +
                    "axes:\n  NCCL_MIN_CTAS: [1, 2, 16]\n  NCCL_MAX_CTAS: [1, 2]\n"
                    "  NCCL_PROTO: [LL, Simple]\n";
    CHECK(
        error_of(m + "zip: [[NCCL_MIN_CTAS, NCCL_MAX_CTAS]]\n") ==
        "spec.yaml:7:7: zip group [NCCL_MIN_CTAS, NCCL_MAX_CTAS] needs axes of equal length, but "
        "NCCL_MIN_CTAS "
        "has 3 values (spec.yaml:4:3) and NCCL_MAX_CTAS has 2 (spec.yaml:5:3); give them the same number of "
        "values");
    CHECK(error_of(m + "zip: [[NCCL_MIN_CTAS, NCCL_MAX_CTA]]\n") ==
          "spec.yaml:7:7: zip names 'NCCL_MAX_CTA', which is not an axis; did you mean 'NCCL_MAX_CTAS'?");
    CHECK(error_of(m + "zip: [[NCCL_PROTO]]\n")
              .rfind("spec.yaml:7:7: a zip group needs at least two axes", 0) == 0);
    CHECK(
        error_of(m + "exclude:\n  - {NCCL_PROTOO: LL}\n") ==
        "spec.yaml:8:5: exclude names 'NCCL_PROTOO', which is not an axis (exclude entries match axis values "
        "only); did you mean 'NCCL_PROTO'?");
    CHECK(error_of(m + "exclude:\n  - {NCCL_PROTO: [LL, Simpel]}\n") ==
          "spec.yaml:8:23: exclude value 'Simpel' is not a value of axis NCCL_PROTO (LL, Simple), so it "
          "would never "
          "match; did you mean 'Simple'?");
    CHECK(error_of(m + "include:\n  - {NCCL_PROTO: LL, Bad_Name: 1}\n")
              .rfind("spec.yaml:8:32: include key 'Bad_Name'", 0) == 0);
    CHECK(error_of(m + "exclude:\n  - {NCCL_PROTO: [LL]}\ninclude:\n  - {NCCL_PROTO: LL128, tokens: 8}\n")
              .empty());
}

TEST_CASE("load_spec reports a missing file with its path") {
    auto spec = load_spec("/nonexistent/dir/spec.yaml");
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().kind == ErrorKind::bad_input);
    CHECK(spec.error().message.rfind("/nonexistent/dir/spec.yaml: cannot open the spec file", 0) == 0);
    test::TempDir dir;
    auto path = dir.write("bad.yaml", "sweep: s\n\xff\xfe: x\n");
    auto bad = load_spec(path.string());
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message == path.string() + ":2:1: the spec is not valid UTF-8 here; save it as UTF-8");
}

TEST_CASE("names are classified as environment variables or workload parameters") {
    CHECK(classify_name("NCCL_ALGO") == NameKind::env);
    CHECK(classify_name("_X1") == NameKind::env);
    CHECK(classify_name("tokens") == NameKind::workload);
    CHECK(classify_name("max_seconds2") == NameKind::workload);
    CHECK(classify_name("Tokens") == NameKind::invalid);
    CHECK(classify_name("a-b") == NameKind::invalid);
    CHECK(classify_name("1a") == NameKind::invalid);
    CHECK(classify_name("___") == NameKind::invalid);
    CHECK(name_problem("tokens").empty());
}

TEST_CASE("parser reads a Slurm target and a pool of hosts") {
    auto spec = parse_spec(R"(target:
  url: slurm://gpu
  slurm: {array_limit: 2, gres: "gpu:8", time: "00:20:00", account: null, sbatch: ["--exclusive"], poll: 3s}
workload: {engine: tpverify}
)",
                           "spec.yaml");
    REQUIRE(spec);
    CHECK(spec->target.url == "slurm://gpu");
    CHECK(spec->target.slurm.array_limit == 2);
    CHECK(spec->target.slurm.gres == "gpu:8");
    CHECK(spec->target.slurm.time == "00:20:00");
    CHECK(spec->target.slurm.account.empty());
    CHECK(spec->target.slurm.sbatch == std::vector<std::string>{"--exclusive"});
    CHECK(spec->target.slurm.poll_seconds == 3);
    CHECK(!spec->target.slurm.pending_timeout_seconds);  // default: wait as long as Slurm does
    auto timed = parse_spec(
        "target: {url: slurm://gpu, slurm: {pending_timeout: 20m}}\nworkload: {engine: tpverify}\n",
        "spec.yaml");
    REQUIRE(timed);
    CHECK(timed->target.slurm.pending_timeout_seconds == 1200);
    auto unlimited =
        parse_spec("target: {url: slurm://gpu, slurm: {pending_timeout: 0}}\nworkload: {engine: tpverify}\n",
                   "spec.yaml");
    REQUIRE(unlimited);
    CHECK(!unlimited->target.slurm.pending_timeout_seconds);
    auto pool = parse_spec("target: {hosts: [ssh://a, 'ssh://me@b:2222']}\nworkload: {engine: tpverify}\n",
                           "spec.yaml");
    REQUIRE(pool);
    CHECK(pool->target.hosts == std::vector<std::string>{"ssh://a", "ssh://me@b:2222"});
    CHECK(pool->target.url == "hosts:ssh://a,ssh://me@b:2222");
}

TEST_CASE("Slurm and pool target errors are located") {
    CHECK(
        error_of("target: slurm://\nworkload: {engine: tpverify}\n") ==
        "spec.yaml:1:9: target 'slurm://' does not name one Slurm partition; write `slurm://PARTITION` (e.g. "
        "slurm://gpu)");
    CHECK(error_of("target: {url: slurm://gpu, slurm: {array_limt: 2}}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:36: unknown key 'array_limt' in target.slurm; did you mean 'array_limit'?");
    CHECK(
        error_of("target: {url: slurm://gpu, slurm: {sbatch: [--array=1-3]}}\nworkload: {engine: tpverify}\n")
            .find("is set by ncclsweep itself") != std::string::npos);
    CHECK(
        error_of("target: {url: slurm://gpu, slurm: {sbatch: '--exclusive'}}\nworkload: {engine: tpverify}\n")
            .find("must be a list of sbatch options") != std::string::npos);
    CHECK(error_of("target: {url: slurm://gpu, slurm: {array_limit: 0}}\nworkload: {engine: tpverify}\n")
              .rfind("spec.yaml:1:49: target.slurm.array_limit", 0) == 0);
    CHECK(error_of(
              "target: {url: slurm://gpu, slurm: {pending_timeout: soon}}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:53: target.slurm.pending_timeout must be a duration in seconds such as 90, 90s, 20m "
          "or 1h "
          "(0 = no limit), not 'soon'");
    CHECK(error_of("target: {url: slurm://gpu, slurm: {pending_timeout: -5}}\nworkload: {engine: tpverify}\n")
              .rfind("spec.yaml:1:53: target.slurm.pending_timeout must be a duration", 0) == 0);
    CHECK(error_of(
              "target: {url: slurm://gpu, slurm: {pending_timeout: 0.5}}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:53: target.slurm.pending_timeout must be at least 1 s (0 or null: wait as long as "
          "Slurm does)");
    CHECK(error_of("target: {url: local, slurm: {time: '1'}}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:9: target.slurm is given but target.url is not slurm://PARTITION");
    CHECK(error_of("target: {hosts: [local]}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:18: target.hosts[0] 'local' is not an ssh:// URL; a pool runs over ssh");
    CHECK(error_of("target: {url: local, hosts: [ssh://a]}\nworkload: {engine: tpverify}\n") ==
          "spec.yaml:1:9: target has both `url` and `hosts`; a pool is `hosts: [ssh://a, ssh://b]` alone");
}

TEST_CASE(
    "target.workdir that cannot go on PYTHONPATH is refused at its line when delivery uses sitecustomize") {
    for (const char* delivery : {"sitecustomize", "both"}) {
        INFO(delivery);
        auto spec = parse_spec(
            std::string("sweep: x\ntarget:\n  env_delivery: ") + delivery +
                "\n  workdir: /scratch/a:b\nworkload: {command: [true]}\naxes: {NCCL_PROTO: [LL]}\n",
            "x.yaml");
        REQUIRE_FALSE(spec.ok());
        CHECK(spec.error().kind == ErrorKind::bad_input);
        CHECK(spec.error().message.rfind("x.yaml:4:", 0) == 0);
        CHECK(spec.error().message.find("contains ':'") != std::string::npos);
        CHECK(spec.error().message.find("PYTHONPATH") != std::string::npos);
    }
    // Written before env_delivery, and with a line break: the same.
    auto newline = parse_spec(
        "sweep: x\ntarget:\n  workdir: \"/scratch/a\\nb\"\nworkload: {command: [true]}\n"
        "axes: {NCCL_PROTO: [LL]}\n",
        "x.yaml");
    REQUIRE_FALSE(newline.ok());
    CHECK(newline.error().message.find("a line break") != std::string::npos);
    // The process environment needs no PYTHONPATH.
    CHECK(parse_spec(
              "sweep: x\ntarget:\n  workdir: /scratch/a:b\n  env_delivery: env\nworkload: {command: [true]}\n"
              "axes: {NCCL_PROTO: [LL]}\n",
              "x.yaml")
              .ok());
}
