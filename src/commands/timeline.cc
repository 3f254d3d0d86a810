#include "commands/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/duration.h"
#include "core/loop.h"
#include "core/text.h"

namespace rlock {

namespace {

// A whole number of ms stored in an event ("" or anything else: nullopt).
std::optional<int64_t> ms_field(const std::string& v) {
  if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::strtoll(v.c_str(), nullptr, 10);
}

// The row a `who` goes to: "HOST pid N" is HOST's; a label is its own.
std::string host_of(const std::string& who) {
  auto at = who.rfind(" pid ");
  if (at != std::string::npos && at > 0 && at + 5 < who.size() &&
      who.find_first_not_of("0123456789", at + 5) == std::string::npos)
    return who.substr(0, at);
  return who.empty() ? "?" : who;
}

bool is_end(const std::string& ev) {
  return ev == "released" || ev == "kept" || ev == "done" || ev == "expired" || ev == "lost" ||
         ev == "broken";
}

// The mark a hold's end gets (TimelineSpan::mark).
void mark_end(TimelineSpan& s, const Event& e) {
  if (e.ev == "expired") s.mark = 'E';
  if (e.ev == "broken") s.mark = 'B';
  if (e.ev == "lost") s.mark = 'L';
  std::string exit = e.get("exit");
  if ((e.ev == "released" || e.ev == "kept" || e.ev == "done") && !exit.empty() && exit != "0") {
    s.mark = '!';
    // (the history is anybody's to write: only a number is drawn)
    s.exit =
        exit.size() <= 4 && exit.find_first_not_of("0123456789-") == std::string::npos ? exit : "?";
  }
}

struct Builder {
  Timeline t;
  std::map<std::string, size_t> row_index;
  struct Open {
    size_t row;
    int64_t from;
  };
  std::map<std::string, Open> open;  // token -> its hold, acquired and not ended

  size_t row(const std::string& who) {
    std::string host = host_of(who);
    auto [it, added] = row_index.emplace(host, t.rows.size());
    if (added) t.rows.push_back(TimelineRow{host, {}});
    return it->second;
  }
  void add(size_t r, TimelineSpan s) { t.rows[r].spans.push_back(std::move(s)); }

  void event(const Event& e, int64_t window_from) {
    const std::string tok = e.get("tok");
    if (e.ev == "acquired") {
      size_t r = row(e.get("who"));
      if (auto w = ms_field(e.get("waited")); w && *w > 0)
        add(r, {TimelineSpan::Kind::Wait, e.ms - *w, e.ms});
      open[tok] = Open{r, e.ms};
    } else if (e.ev == "gave-up") {
      if (auto w = ms_field(e.get("waited")); w && *w > 0)
        add(row(e.get("who")), {TimelineSpan::Kind::Wait, e.ms - *w, e.ms});
    } else if (is_end(e.ev)) {
      size_t r;
      int64_t from;
      if (auto it = open.find(tok); it != open.end() && !tok.empty()) {
        r = it->second.row;
        from = it->second.from;
        open.erase(it);
      } else {
        // Acquired before the history's oldest event: as long as it says it held.
        r = row(e.get("who"));
        auto held = ms_field(e.get("held"));
        from = held ? e.ms - *held : std::min(window_from, e.ms);
      }
      TimelineSpan s{TimelineSpan::Kind::Hold, from, e.ms};
      mark_end(s, e);
      add(r, s);
      if (auto until = ms_field(e.get("until")); until && *until > e.ms)
        add(r, {TimelineSpan::Kind::Kept, e.ms, *until});
    }
  }
};

}  // namespace

Timeline make_timeline(const std::vector<Event>& events, int64_t now_ms, int64_t since_ms) {
  Builder b;
  const int64_t window_from =
      since_ms > 0 ? now_ms - since_ms : (events.empty() ? now_ms : events.front().ms);
  for (const Event& e : events) b.event(e, window_from);
  for (auto& [tok, o] : b.open) {
    TimelineSpan s{TimelineSpan::Kind::Hold, o.from, std::max(o.from, now_ms)};
    s.open = true;
    b.add(o.row, s);
  }
  Timeline& t = b.t;
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (auto& r : t.rows)
    for (auto& s : r.spans) {
      s.to_ms = std::min(s.to_ms, std::max(s.from_ms, now_ms));
      from = std::min(from, s.from_ms);
      to = std::max(to, s.to_ms);
    }
  if (since_ms > 0) {
    from = now_ms - since_ms;
    to = now_ms;
  } else if (from > to) {
    from = to = now_ms;
  }
  if (to <= from) to = from + 1000;
  t.from_ms = from;
  t.to_ms = to;
  std::vector<TimelineRow> kept;
  for (auto& r : t.rows) {
    std::vector<TimelineSpan> in;
    for (auto& s : r.spans) {
      if (s.to_ms < from || s.from_ms > to) continue;
      s.from_ms = std::max(s.from_ms, from);
      s.to_ms = std::min(s.to_ms, to);
      in.push_back(s);
    }
    if (!in.empty()) kept.push_back(TimelineRow{r.who, std::move(in)});
  }
  t.rows = std::move(kept);
  return t;
}

namespace {

// The axis: ticks every `step` ms, the labels' form for that step.
struct Axis {
  int64_t step;
  std::string label(int64_t ms) const {
    std::string iso = utc_iso(ms);  // 2026-11-27T14:03:22.123Z
    if (step >= 86'400'000) return iso.substr(5, 5);
    if (step >= 60'000) return iso.substr(11, 5);
    if (step >= 1'000) return iso.substr(11, 8);
    return iso.substr(14, 9);  // 03:22.125
  }
};

// The smallest round step whose ticks stand at least `min_gap` of `span`'s
// `cells` apart.
Axis axis_for(int64_t span, double cells, double min_gap) {
  static constexpr int64_t kSteps[] = {
      1,          2,          5,          10,          20,         50,        100,       200,
      500,        1'000,      2'000,      5'000,       10'000,     15'000,    30'000,    60'000,
      120'000,    300'000,    600'000,    900'000,     1'800'000,  3'600'000, 7'200'000, 10'800'000,
      21'600'000, 43'200'000, 86'400'000, 172'800'000, 604'800'000};
  for (int64_t s : kSteps)
    if (static_cast<double>(s) * cells / static_cast<double>(span) >= min_gap) return Axis{s};
  int64_t s = 604'800'000;
  while (static_cast<double>(s) * cells / static_cast<double>(span) < min_gap) s *= 2;
  return Axis{s};
}

// The first tick at or after `from`.
int64_t first_tick(int64_t from, int64_t step) {
  int64_t t = from / step * step;
  return t < from ? t + step : t;
}

const char* kGlyph[] = {"░", "█", "▒"};  // by TimelineSpan::Kind
const char* kColor[] = {"\x1b[33m", "\x1b[32m", "\x1b[36m"};
constexpr const char* kMarkColor = "\x1b[1;31m";
constexpr const char* kReset = "\x1b[0m";

// Columns right of the bars, where an exit status may follow the last one.
constexpr size_t kMarkRoom = 4;

struct Cell {
  std::string glyph = " ";
  const char* color = nullptr;
};

const char* const kLegend[] = {
    "█ held",      "░ waiting", "▒ kept after its command (--min-hold, --done-for)",
    "!N exited N", "E expired", "B broken",
    "L lost"};

std::string legend_text() {
  std::string out;
  for (const char* item : kLegend) out += (out.empty() ? "" : "  ") + std::string(item);
  return out;
}

// The legend in lines of at most `width` columns, its items two spaces apart.
std::string legend_lines(size_t width) {
  std::string out, line;
  for (const char* item : kLegend) {
    std::string next = line.empty() ? item : line + "  " + item;
    if (!line.empty() && text_columns(next) > width) {
      out += line + "\n";
      next = item;
    }
    line = truncate_columns(next, width);
  }
  return out + line + "\n";
}

}  // namespace

std::string draw_timeline(const Timeline& t, const std::string& key, size_t width, bool color) {
  width = std::max<size_t>(width, 40);
  size_t name_w = 4;
  for (auto& r : t.rows) name_w = std::max(name_w, text_columns(escape_text(r.who)));
  name_w = std::min(name_w, std::max<size_t>(8, width / 4));
  // The bars' columns; the last few are kept for an exit status after a bar.
  const size_t cells = width - name_w - 2 - kMarkRoom;
  const int64_t span = t.to_ms - t.from_ms;
  auto cell_of = [&](int64_t ms) {
    auto c = static_cast<int64_t>(static_cast<__int128>(ms - t.from_ms) *
                                  static_cast<__int128>(cells) / span);
    return static_cast<size_t>(std::clamp<int64_t>(c, 0, static_cast<int64_t>(cells) - 1));
  };

  std::string out = fmt::format(
      "{}  {} .. {} ({}), one column = {}\n", escape_text(key), utc_when(t.from_ms),
      utc_when(t.to_ms), format_duration(Millis(span)),
      format_duration(Millis(std::max<int64_t>(1, span / static_cast<int64_t>(cells)))));
  for (auto& r : t.rows) {
    std::vector<Cell> line(cells + kMarkRoom);
    // Waits under holds, holds under what was kept after them, marks on top.
    for (auto kind : {TimelineSpan::Kind::Wait, TimelineSpan::Kind::Hold, TimelineSpan::Kind::Kept})
      for (auto& s : r.spans) {
        if (s.kind != kind) continue;
        auto k = static_cast<size_t>(kind);
        for (size_t c = cell_of(s.from_ms), e = cell_of(s.to_ms); c <= e; ++c)
          line[c] = Cell{kGlyph[k], kColor[k]};
      }
    for (auto& s : r.spans) {
      if (!s.mark) continue;
      size_t c = cell_of(s.to_ms);
      line[c] = Cell{std::string(1, s.mark), kMarkColor};
      if (s.mark != '!') continue;
      // The exit status after the bar, where nothing else is drawn.
      for (size_t i = 0;
           i < s.exit.size() && c + 1 + i < line.size() && line[c + 1 + i].glyph == " "; ++i)
        line[c + 1 + i] = Cell{std::string(1, s.exit[i]), kMarkColor};
    }
    std::string name = truncate_columns(escape_text(r.who), name_w);
    out += name + std::string(name_w - text_columns(name) + 2, ' ');
    const char* now = nullptr;
    std::string row;
    for (const Cell& c : line) {
      const char* want = c.glyph == " " ? nullptr : c.color;
      if (color && want != now) {
        row += want ? want : kReset;
        now = want;
      }
      row += c.glyph;
    }
    if (color && now) row += kReset;
    // No trailing blanks: a row ends where its last mark does.
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }

  // The axis: a rule with a tick at every step, and the tick's time under it
  // where it fits.
  const Axis axis = axis_for(span, static_cast<double>(cells), 11.0);
  std::string rule, labels;
  std::vector<std::string> rule_cells(cells, "─");
  std::string label_line(cells + kMarkRoom, ' ');
  size_t free_from = 0;
  for (int64_t tick = first_tick(t.from_ms, axis.step); tick <= t.to_ms; tick += axis.step) {
    size_t c = cell_of(tick);
    rule_cells[c] = "┴";
    std::string l = axis.label(tick);
    if (c >= free_from && c + l.size() <= label_line.size()) {
      label_line.replace(c, l.size(), l);
      free_from = c + l.size() + 1;
    }
  }
  for (auto& c : rule_cells) rule += c;
  while (!label_line.empty() && label_line.back() == ' ') label_line.pop_back();
  const std::string pad(name_w + 2, ' ');
  out += pad + rule + "\n";
  out += pad + label_line + "\n";
  out += pad + fmt::format("UTC, a tick every {}", format_duration(Millis(axis.step))) + "\n";
  out += legend_lines(width);
  return out;
}

namespace {

// Text for XML: escape_text's printable one-line form, with & < > " ' as entities.
std::string xml_text(std::string_view s) {
  std::string out;
  for (char c : escape_text(s)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* kFill[] = {"#f2c94c", "#2e7d32", "#81c784"};  // by TimelineSpan::Kind
const char* kKindName[] = {"waiting", "held", "kept"};

std::string mark_name(const TimelineSpan& s) {
  switch (s.mark) {
    case 'E':
      return "expired";
    case 'B':
      return "broken";
    case 'L':
      return "lost";
    case '!':
      return "exited " + s.exit;
    default:
      return s.open ? "still held" : "";
  }
}

}  // namespace

std::string timeline_svg(const Timeline& t, const std::string& key) {
  constexpr int kWidth = 1000, kName = 200, kRow = 24, kTop = 40, kRight = 20;
  constexpr int kArea = kWidth - kName - kRight;
  const int rows = static_cast<int>(t.rows.size());
  const int axis_y = kTop + rows * kRow + 4;
  const int height = axis_y + 70;
  const int64_t span = t.to_ms - t.from_ms;
  auto x_of = [&](int64_t ms) {
    return kName + static_cast<double>(ms - t.from_ms) * kArea / static_cast<double>(span);
  };
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      kWidth, height);
  out += fmt::format("<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     xml_text(key));
  out += fmt::format("<text x=\"{}\" y=\"20\">{} .. {} ({})</text>\n", kName, utc_when(t.from_ms),
                     utc_when(t.to_ms), format_duration(Millis(span)));
  for (int i = 0; i < rows; ++i) {
    const TimelineRow& r = t.rows[static_cast<size_t>(i)];
    const int y = kTop + i * kRow;
    out += fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", y + 16,
                       xml_text(truncate_columns(r.who, 30)));
    for (auto kind : {TimelineSpan::Kind::Wait, TimelineSpan::Kind::Hold, TimelineSpan::Kind::Kept})
      for (const TimelineSpan& s : r.spans) {
        if (s.kind != kind) continue;
        auto k = static_cast<size_t>(kind);
        double x0 = x_of(s.from_ms), w = std::max(1.0, x_of(s.to_ms) - x0);
        std::string end = mark_name(s);
        out += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
            "<title>{}: {} {} .. {}{}</title></rect>\n",
            x0, y + 4, w, kRow - 8, kFill[k], xml_text(r.who), kKindName[k], utc_when(s.from_ms),
            utc_when(s.to_ms), end.empty() ? "" : ", " + xml_text(end));
        if (s.mark)
          out += fmt::format(
              "<text x=\"{:.1f}\" y=\"{}\" fill=\"#c62828\" font-weight=\"bold\">{}</text>\n",
              x0 + w + 2, y + 16, xml_text(s.mark == '!' ? "!" + s.exit : std::string(1, s.mark)));
      }
  }
  const Axis axis = axis_for(span, kArea, 70.0);
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>\n", kName,
                     axis_y, kName + kArea, axis_y);
  for (int64_t tick = first_tick(t.from_ms, axis.step); tick <= t.to_ms; tick += axis.step) {
    double x = x_of(tick);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#000000\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, axis_y, axis_y + 5, axis_y + 18, axis.label(tick));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\">UTC, a tick every {}</text>\n", kName, axis_y + 36,
                     format_duration(Millis(axis.step)));
  out += fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", axis_y + 56, xml_text(legend_text()));
  return out + "</svg>\n";
}

}  // namespace rlock
