// Parsing the measured kernel table (engine/sim/kernel_table.hpp).
#include "engine/sim/kernel_table.hpp"

#include <cstdlib>
#include <set>
#include <sstream>

namespace tpverify::sim {

double KernelTable::Gemm::bytes() const {
    const double nk = double(n) * k;
    return count * (int4 ? nk / 2 + nk / 32 * 2 : nk * 2);
}

namespace {

bool number(const std::string& word, double& out) {
    char* end = nullptr;
    out = std::strtod(word.c_str(), &end);
    return !word.empty() && *end == '\0' && out >= 0;
}

}  // namespace

bool parse_kernel_table(const std::string& text, const std::string& name, KernelTable& out,
                        std::string& error) {
    out = KernelTable{};
    out.source = name;
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    bool header = false;
    std::set<std::string> seen;
    while (std::getline(in, line)) {
        ++lineno;
        auto fail = [&](const std::string& what) {
            error = name + ":" + std::to_string(lineno) + ": " + what;
            return false;
        };
        if (line.rfind("#", 0) == 0) {
            if (out.note.empty()) out.note = line.substr(line.find_first_not_of("# "));
            continue;
        }
        if (const auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        std::vector<std::string> w;
        for (std::string x; words >> x;) w.push_back(x);
        if (w.empty()) continue;
        if (w[0] == "tpverify-kernels") {
            if (w.size() != 2 || w[1] != "1")
                return fail("unsupported version (this tpverify reads 'tpverify-kernels 1')");
            header = true;
            continue;
        }
        if (!header) return fail("expected the header 'tpverify-kernels 1' first");
        if (w[0] == "gpu") {
            if (out.gpu.empty()) out.gpu = line.substr(line.find("gpu") + 4);
            continue;
        }
        std::vector<double> v;
        for (std::size_t i = 1; i < w.size(); ++i) {
            double x = 0;
            if (w[0] == "gemm" && i == 1) continue;
            if (w[0] == "op" && i == 1) continue;
            if (!number(w[i], x)) return fail("'" + w[i] + "' is not a number >= 0");
            v.push_back(x);
        }
        const std::string key = line.substr(0, line.rfind(' '));
        const bool repeated = !seen.insert(key).second;
        if (w[0] == "copy_gbps") {
            if (v.size() != 1 || v[0] <= 0) return fail("copy_gbps needs one positive number");
            if (out.copy_gbps == 0) out.copy_gbps = v[0];
        } else if (w[0] == "gemm") {
            if (v.size() != 5 || (w[1] != "int4" && w[1] != "bf16"))
                return fail("expected 'gemm int4|bf16 ROWS N K COUNT US'");
            if (!repeated)
                out.gemms.push_back({w[1] == "int4", int(v[0]), int(v[1]), int(v[2]), int(v[3]), v[4]});
        } else if (w[0] == "op") {
            if (v.size() != 3) return fail("expected 'op NAME ROWS WIDTH US'");
            if (!repeated) out.ops.push_back({w[1], int(v[0]), int(v[1]), v[2]});
        } else if (w[0] == "attention") {
            if (v.size() != 8)
                return fail("expected 'attention ROWS HEADS KV_HEADS ROW_DIM QK_DIM V_DIM CONTEXT US'");
            if (!repeated)
                out.attention.push_back(
                    {int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]), int(v[5]), int(v[6]), v[7]});
        } else if (w[0] == "norm") {
            if (v.size() != 2) return fail("expected 'norm BYTES US'");
            if (!repeated) out.norms.push_back({v[0], v[1]});
        } else {
            return fail("unknown line '" + w[0] + "' (gpu, copy_gbps, gemm, op, attention, norm)");
        }
    }
    if (!header) {
        error = name + ": empty (no 'tpverify-kernels 1' header)";
        return false;
    }
    if (out.copy_gbps <= 0) {
        error = name + ": no copy_gbps line";
        return false;
    }
    return true;
}

}  // namespace tpverify::sim
