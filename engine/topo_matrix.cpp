// Reading `nvidia-smi topo -m` output (engine/topo_matrix.hpp).
#include "engine/topo_matrix.hpp"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace tpverify {
namespace {

/// The text without ANSI escape sequences (ESC [ ... final letter), as a terminal shows it.
std::string without_ansi(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\x1b') {
            if (i + 1 < text.size() && text[i + 1] == '[') {
                i += 2;
                while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
            }
            continue;
        }
        out += text[i];
    }
    return out;
}

std::vector<std::string> words(const std::string& line) {
    std::vector<std::string> out;
    std::string word;
    for (char c : line) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!word.empty()) out.push_back(word);
            word.clear();
        } else {
            word += c;
        }
    }
    if (!word.empty()) out.push_back(word);
    return out;
}

/// The index of "GPU<k>" (-1 for anything else).
int gpu_index(const std::string& word) {
    if (word.size() < 4 || word.compare(0, 3, "GPU") != 0) return -1;
    int v = 0;
    for (std::size_t i = 3; i < word.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(word[i])) || v > 100000) return -1;
        v = v * 10 + (word[i] - '0');
    }
    return v;
}

bool parse_link(const std::string& cell, TopoLink& out) {
    static const std::map<std::string, TopoLinkKind> k_kinds = {
        {"X", TopoLinkKind::self},  {"PIX", TopoLinkKind::pix},   {"PXB", TopoLinkKind::pxb},
        {"PHB", TopoLinkKind::phb}, {"NODE", TopoLinkKind::node}, {"SYS", TopoLinkKind::sys},
        {"SOC", TopoLinkKind::sys},  // the name of SYS in drivers before 2017
    };
    if (auto it = k_kinds.find(cell); it != k_kinds.end()) {
        out = {it->second, 0};
        return true;
    }
    if (cell.size() > 2 && cell.compare(0, 2, "NV") == 0) {
        int n = 0;
        for (std::size_t i = 2; i < cell.size(); ++i) {
            if (!std::isdigit(static_cast<unsigned char>(cell[i])) || n > 1000) return false;
            n = n * 10 + (cell[i] - '0');
        }
        if (n == 0) return false;
        out = {TopoLinkKind::nvlink, n};
        return true;
    }
    return false;
}

}  // namespace

std::string topo_link_name(const TopoLink& link) {
    switch (link.kind) {
        case TopoLinkKind::self:
            return "X";
        case TopoLinkKind::nvlink:
            return "NV" + std::to_string(link.nvlinks);
        case TopoLinkKind::pix:
            return "PIX";
        case TopoLinkKind::pxb:
            return "PXB";
        case TopoLinkKind::phb:
            return "PHB";
        case TopoLinkKind::node:
            return "NODE";
        case TopoLinkKind::sys:
            return "SYS";
    }
    return "?";
}

bool TopoMatrix::same_paths(const TopoMatrix& other, int n) const {
    if (gpus() < n || other.gpus() < n) return false;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            if (!(link[i][j] == other.link[i][j])) return false;
    return true;
}

bool parse_topo_matrix(const std::string& text, const std::string& name, TopoMatrix& out, std::string& error,
                       int first_line) {
    out = TopoMatrix{};
    out.source = name;
    std::istringstream in(without_ansi(text));
    std::string line;
    int line_no = first_line - 1;
    auto fail = [&](int at, const std::string& what) {
        error = name + ":" + std::to_string(at) + ": " + what;
        return false;
    };
    int gpus = 0;                      // GPU columns of the header
    std::vector<std::string> devices;  // every device column (GPUs, then NICs)
    bool has_cpu = false, has_numa = false;
    std::vector<int> row_line;
    std::vector<std::string> affinity;  // per GPU: NUMA Affinity, else CPU Affinity
    while (std::getline(in, line)) {
        ++line_no;
        const std::vector<std::string> w = words(line);
        if (gpus == 0) {  // before the header: "$ nvidia-smi topo -m", blank lines, a title
            if (w.empty() || gpu_index(w[0]) != 0) continue;
            for (const std::string& word : w) {
                if (word == "CPU") break;
                if (gpu_index(word) == gpus)
                    ++gpus;
                else if (gpu_index(word) >= 0)
                    return fail(line_no, "the header names " + word + " after GPU" +
                                             std::to_string(gpus - 1) +
                                             "; nvidia-smi numbers the GPU columns GPU0, GPU1, ... in order");
                devices.push_back(word);
            }
            for (std::size_t i = 0; i + 1 < w.size(); ++i) {
                has_cpu = has_cpu || (w[i] == "CPU" && w[i + 1] == "Affinity");
                has_numa = has_numa || (w[i] == "NUMA" && w[i + 1] == "Affinity");
            }
            out.link.assign(static_cast<std::size_t>(gpus),
                            std::vector<TopoLink>(static_cast<std::size_t>(gpus)));
            row_line.assign(static_cast<std::size_t>(gpus), 0);
            affinity.assign(static_cast<std::size_t>(gpus), std::string());
            continue;
        }
        if (w.empty()) continue;
        const int row = gpu_index(w[0]);
        if (row < 0) {
            bool device_row = false;
            for (const std::string& d : devices) device_row = device_row || d == w[0];
            if (device_row) continue;  // a NIC's row
            break;                     // the legend, or whatever follows the matrix
        }
        if (row >= gpus)
            return fail(line_no, "a row for " + w[0] + " but the header names " + std::to_string(gpus) +
                                     " GPUs (GPU0..GPU" + std::to_string(gpus - 1) + ")");
        if (row_line[static_cast<std::size_t>(row)] != 0)
            return fail(line_no, "a second row for " + w[0] + " (the first is line " +
                                     std::to_string(row_line[static_cast<std::size_t>(row)]) + ")");
        if (w.size() < devices.size() + 1)
            return fail(line_no, w[0] + "'s row has " + std::to_string(w.size() - 1) +
                                     " cells where the header names " + std::to_string(devices.size()) +
                                     " devices; paste the matrix as nvidia-smi printed it");
        row_line[static_cast<std::size_t>(row)] = line_no;
        for (int col = 0; col < gpus; ++col) {
            TopoLink link;
            const std::string& cell = w[static_cast<std::size_t>(col) + 1];
            if (!parse_link(cell, link))
                return fail(line_no, "'" + cell + "' (" + w[0] + " to GPU" + std::to_string(col) +
                                         ") is not a connection nvidia-smi topo -m prints (X, NV#, PIX, PXB, "
                                         "PHB, NODE, SYS)");
            if ((link.kind == TopoLinkKind::self) != (col == row))
                return fail(line_no,
                            w[0] + " to GPU" + std::to_string(col) + " is " + cell +
                                (col == row ? "; a GPU's own cell is X" : "; only a GPU's own cell is X"));
            out.link[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)] = link;
        }
        const std::size_t rest = devices.size() + 1;
        if (has_cpu && w.size() > rest) {
            affinity[static_cast<std::size_t>(row)] = w[rest];  // CPU Affinity
            if (has_numa && w.size() > rest + 1 && w[rest + 1] != "N/A")
                affinity[static_cast<std::size_t>(row)] = "numa " + w[rest + 1];
        }
    }
    if (gpus == 0)
        return fail(first_line,
                    "no header line naming GPU0, GPU1, ...; give what `nvidia-smi topo -m` prints (tabs, "
                    "spaces, colours and the legend are fine)");
    for (int i = 0; i < gpus; ++i)
        if (row_line[static_cast<std::size_t>(i)] == 0)
            return fail(line_no, "no row for GPU" + std::to_string(i) + " (the header names " +
                                     std::to_string(gpus) + " GPUs); paste the whole matrix");
    for (int i = 0; i < gpus; ++i)
        for (int j = 0; j < i; ++j) {
            const TopoLink& a = out.link[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
            const TopoLink& b = out.link[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)];
            if (!(a == b))
                return fail(row_line[static_cast<std::size_t>(i)],
                            "GPU" + std::to_string(i) + " to GPU" + std::to_string(j) + " is " +
                                topo_link_name(a) + " but GPU" + std::to_string(j) + " to GPU" +
                                std::to_string(i) + " (line " +
                                std::to_string(row_line[static_cast<std::size_t>(j)]) + ") is " +
                                topo_link_name(b) + "; a connection matrix is symmetric");
        }
    std::map<std::string, int> sockets;
    for (const std::string& a : affinity)
        out.socket.push_back(sockets.emplace(a, static_cast<int>(sockets.size())).first->second);
    return true;
}

bool load_topo_matrix(const std::string& path, TopoMatrix& out, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = path +
                ": cannot read the topology file (save `nvidia-smi topo -m > FILE` on the machine and "
                "give that file)";
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_topo_matrix(text.str(), path, out, error);
}

}  // namespace tpverify
