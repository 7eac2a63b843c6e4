// Fuzz target: arbitrary NAME=VALUE lines -> nccl::check_value on each, then
// nccl::check_environment on all of them. An optional first line "@<bytes> <topology>" sets the
// workload context. Invariants: names outside NCCL_* give no findings; every finding has a code
// and a message, names the variable it was asked about, and carries no control characters
// (values are shown escaped, so a hostile value cannot drive the terminal); results are
// deterministic.
#include <cstdint>
#include <string>

#include "core/nccl/nccl.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ncclsweep;

namespace {

void check_finding(const nccl::Finding& finding) {
    FUZZ_CHECK(!finding.code.empty(), finding.message);
    FUZZ_CHECK(!finding.message.empty(), finding.code);
    for (char c : finding.message)
        FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f,
                   "control character in the message of " + finding.code);
}

bool same(const std::vector<nccl::Finding>& a, const std::vector<nccl::Finding>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].code != b[i].code || a[i].message != b[i].message || a[i].variable != b[i].variable ||
            a[i].severity != b[i].severity)
            return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    auto lines = fuzz::split(fuzz::as_text(data, size), '\n');
    nccl::WorkloadContext context;
    std::size_t first = 0;
    if (!lines.empty() && !lines[0].empty() && lines[0][0] == '@') {
        const std::string& head = lines[0];
        std::uint64_t bytes = 0;
        std::size_t i = 1;
        for (; i < head.size() && i < 20 && head[i] >= '0' && head[i] <= '9'; ++i)
            bytes = bytes * 10 + (head[i] - '0');
        context.max_message_bytes = bytes;
        if (i < head.size()) context.topology = head.substr(i + 1 <= head.size() ? i + 1 : i);
        first = 1;
    }
    std::vector<Assignment> env;
    for (std::size_t i = first; i < lines.size() && env.size() < 64; ++i) {
        const std::size_t equals = lines[i].find('=');
        std::string name = lines[i].substr(0, equals);
        std::string value = equals == std::string::npos ? std::string() : lines[i].substr(equals + 1);
        auto findings = nccl::check_value(name, value);
        if (name.rfind("NCCL_", 0) != 0) FUZZ_CHECK(findings.empty(), "finding for a non-NCCL name " + name);
        for (const auto& finding : findings) {
            check_finding(finding);
            FUZZ_CHECK(finding.variable == name, "finding about " + finding.variable + " for " + name);
        }
        FUZZ_CHECK(same(findings, nccl::check_value(name, value)), "check_value is not deterministic");
        env.emplace_back(std::move(name), std::move(value));
    }
    auto findings = nccl::check_environment(env, context);
    for (const auto& finding : findings) check_finding(finding);
    FUZZ_CHECK(same(findings, nccl::check_environment(env, context)),
               "check_environment is not deterministic");
    return 0;
}
