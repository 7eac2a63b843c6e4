#include "core/text.hpp"

#include <algorithm>
#include <vector>

namespace ncclsweep {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t above = row[j];
            std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string count_of(std::size_t n, std::string_view noun) {
    return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

namespace {
std::string lowered(std::string_view text) {
    std::string out(text);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}
}  // namespace

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
    const std::string needle = lowered(word);
    const std::string* best = nullptr;
    std::size_t best_distance = 0;
    for (const auto& candidate : candidates) {
        const std::size_t distance = edit_distance(needle, lowered(candidate));
        if (!best || distance < best_distance) {
            best = &candidate;
            best_distance = distance;
        }
    }
    const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
    if (!best || best_distance > limit) return std::nullopt;
    return *best;
}

std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t* code) {
    if (i >= text.size()) return 0;
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    const std::size_t length = lead < 0x80           ? 1
                               : (lead >> 5) == 0x6  ? 2
                               : (lead >> 4) == 0xE  ? 3
                               : (lead >> 3) == 0x1E ? 4
                                                     : 0;
    if (length == 0 || i + length > text.size()) return 0;
    char32_t value = length == 1   ? lead
                     : length == 2 ? (lead & 0x1F)
                     : length == 3 ? (lead & 0x0F)
                                   : (lead & 0x07);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        value = (value << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr char32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < k_min[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
    if (code != nullptr) *code = value;
    return length;
}

std::size_t invalid_utf8_at(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t length = utf8_sequence(text, i);
        if (length == 0) return i;
        i += length;
    }
    return std::string_view::npos;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut);
}

std::string first_line(std::string_view text, std::size_t max_bytes) {
    std::size_t start = 0;
    std::string_view line;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        line = text.substr(start, end - start);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) break;
        line = {};
        start = end + 1;
    }
    const std::size_t begin = std::min(line.find_first_not_of(" \t"), line.size());
    std::string out;
    out.reserve(std::min(line.size(), max_bytes + 3));
    for (char c : line.substr(begin)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (out.size() > max_bytes) out = std::string(utf8_prefix(out, max_bytes)) + "...";
    return out;
}

std::string fit_width(const std::string& line, int columns) {
    if (columns <= 0) return line;
    // Display columns: one per code point (the lines printed here hold no wide characters).
    const auto limit = static_cast<std::size_t>(columns);
    const std::size_t kept = limit > 3 ? limit - 3 : 0;  // code points before "..."
    std::size_t count = 0, keep_bytes = 0;
    for (std::size_t i = 0; i < line.size(); ++count) {
        if (count == kept) keep_bytes = i;
        const std::size_t length = utf8_sequence(line, i);
        i += length == 0 ? 1 : length;
    }
    if (count <= limit) return line;
    if (limit <= 3) return std::string(limit, '.');
    return line.substr(0, keep_bytes) + "...";
}

std::string shell_quote(const std::string& word) {
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += "'";
    return out;
}

std::string ascii_upper(std::string_view text) {
    std::string out(text);
    for (auto& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

}  // namespace ncclsweep
