// The grid both text layouts share: aligned columns for a terminal, pipe tables for markdown.
#include <algorithm>

#include "core/text.hpp"
#include "results/print/printers_detail.hpp"

namespace ncclsweep::results::detail {
namespace {

// Control characters become spaces; in markdown `|` is escaped and a backslash doubled so the
// table stays a table.
std::string clean(std::string_view cell, Style style) {
    std::string out;
    out.reserve(cell.size());
    for (char c : cell) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
            out += ' ';
        else if (style == Style::markdown && c == '|')
            out += "\\|";
        else if (style == Style::markdown && c == '\\')
            out += "\\\\";
        else
            out += c;
    }
    return out;
}

// Width in terminal columns, counting UTF-8 code points (good enough for ASCII, ±, ~).
std::size_t width(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

void pad(std::string& out, std::string_view cell, std::size_t to, Align align) {
    const std::size_t w = width(cell);
    const std::string fill(to > w ? to - w : 0, ' ');
    if (align == Align::right) out += fill;
    out += cell;
    if (align == Align::left) out += fill;
}

}  // namespace

std::string render_grid(const Grid& grid, Style style, int max_width) {
    const std::size_t columns = grid.header.size();
    std::vector<std::vector<std::string>> cells;
    cells.reserve(grid.rows.size() + 1);
    cells.emplace_back();
    for (const auto& h : grid.header) cells.back().push_back(clean(h, style));
    for (const auto& row : grid.rows) {
        cells.emplace_back();
        for (std::size_t c = 0; c < columns; ++c)
            cells.back().push_back(c < row.size() ? clean(row[c], style) : "");
    }
    auto align_of = [&](std::size_t c) { return c < grid.align.size() ? grid.align[c] : Align::left; };
    std::string out;
    if (style == Style::markdown) {
        for (std::size_t r = 0; r < cells.size(); ++r) {
            out += "|";
            for (const auto& cell : cells[r]) out += " " + cell + " |";
            out += "\n";
            if (r == 0) {
                out += "|";
                for (std::size_t c = 0; c < columns; ++c)
                    out += align_of(c) == Align::right ? "---:|" : "---|";
                out += "\n";
            }
        }
        return out;
    }
    std::vector<std::size_t> widths(columns, 0);
    for (const auto& row : cells)
        for (std::size_t c = 0; c < columns; ++c) widths[c] = std::max(widths[c], width(row[c]));
    if (max_width > 0 && columns > 0) {
        std::size_t total = 2 * (columns - 1);
        for (auto w : widths) total += w;
        const auto limit = static_cast<std::size_t>(max_width);
        // Narrow the cuttable columns, the last first (the free-text diagnosis), then leftwards.
        for (std::size_t c = columns; c-- > 0 && total > limit;) {
            if (c >= grid.cut.size() || grid.cut[c] != Cut::to_fit) continue;
            const std::size_t floor = 12;  // enough to recognise a value or a failure's class
            if (widths[c] <= floor) continue;
            const std::size_t narrower = std::max(floor, widths[c] - std::min(widths[c], total - limit));
            total -= widths[c] - narrower;
            widths[c] = narrower;
            for (auto& row : cells)
                if (width(row[c]) > narrower) row[c] = fit_width(row[c], static_cast<int>(narrower));
        }
    }
    for (const auto& row : cells) {
        std::string line;
        for (std::size_t c = 0; c < columns; ++c) {
            if (c) line += "  ";
            pad(line, row[c], c + 1 == columns && align_of(c) == Align::left ? 0 : widths[c], align_of(c));
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

}  // namespace ncclsweep::results::detail
