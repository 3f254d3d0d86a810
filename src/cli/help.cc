#include "cli/help.h"

#include <algorithm>

#include "core/text.h"

namespace rlock {

namespace {

// Where descriptions start, and the width nothing may pass.
constexpr size_t kDescColumn = 28;
constexpr size_t kWidth = 80;

// Groups of the top-level app that every subcommand accepts too.
constexpr const char* kGlobalGroups[] = {"Connection", "Output"};

class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(HelpLayout layout) : layout_(std::move(layout)) {}

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    (void)mode;
    const CLI::App* top = app;
    while (top->get_parent()) top = top->get_parent();
    bool is_top = app == top;
    std::string out;
    if (!app->get_description().empty())
      out += wrap_text("", app->get_description(), kWidth) + "\n";
    out += usage(app, is_top ? name : app->get_name());
    if (!is_top) out += arguments(app);
    out += group("Options", options(app, "", is_top));
    for (const char* g : kGlobalGroups) {
      std::string title = is_top ? g : std::string(g) + " (before or after the subcommand)";
      out += group(title, options(top, g, false, is_top ? "" : app->get_name()));
    }
    if (is_top) out += subcommands(app);
    // A subcommand's own notes, then the exit table (the top's footer).
    if (!is_top && !app->get_footer().empty() && app->get_footer() != top->get_footer())
      out += "\n" + app->get_footer() + "\n";
    if (!top->get_footer().empty()) out += "\n" + top->get_footer() + "\n";
    return out;
  }

 private:
  std::string usage(const CLI::App* app, const std::string& name) const {
    auto it = layout_.usage.find(app->get_parent() ? app->get_name() : "");
    std::string u = it != layout_.usage.end() ? it->second : name + " [OPTIONS]";
    std::string out;
    bool first = true;
    size_t start = 0;
    // One usage per line; the first says "Usage:", the others "   or:".
    while (start <= u.size()) {
      size_t nl = u.find('\n', start);
      std::string line = u.substr(start, nl == std::string::npos ? nl : nl - start);
      out += wrap_text(first ? "Usage: " : "   or: ", line, kWidth);
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    return out;
  }

  std::string arguments(const CLI::App* app) const {
    std::vector<const CLI::Option*> pos =
        app->get_options([](const CLI::Option* o) { return o->get_positional(); });
    if (pos.empty()) return "";
    std::string out = "\nArguments:\n";
    for (auto* o : pos) out += entry(to_upper(o->get_name()), o->get_description());
    return out;
  }

  // The options of `app` in `group` (all non-positional ones when empty),
  // without --help/--version except at the top, and without the output
  // options the subcommand `sub` does not take.
  std::vector<const CLI::Option*> options(const CLI::App* app, const std::string& group,
                                          bool with_version, const std::string& sub = "") const {
    std::vector<const CLI::Option*> hidden;
    auto h = layout_.hidden_output.find(sub);
    return app->get_options([&](const CLI::Option* o) {
      if (o->get_positional() || o->get_group().empty()) return false;  // hidden
      bool global = std::find(std::begin(kGlobalGroups), std::end(kGlobalGroups), o->get_group()) !=
                    std::end(kGlobalGroups);
      if (group.empty() && global) return false;
      if (!group.empty() && o->get_group() != group) return false;
      if (o->get_name() == "--version" && !with_version) return false;
      if (h != layout_.hidden_output.end() &&
          std::find(h->second.begin(), h->second.end(), o->get_name()) != h->second.end())
        return false;
      return true;
    });
  }

  std::string group(const std::string& title, const std::vector<const CLI::Option*>& opts) const {
    if (opts.empty()) return "";
    std::string out = "\n" + title + ":\n";
    for (auto* o : opts) {
      std::string names = o->get_name(false, true);  // "-u,--url"
      std::string value = o->get_type_name();
      out += entry(value.empty() ? names : names + " " + value, o->get_description());
    }
    return out;
  }

  std::string subcommands(const CLI::App* app) const {
    std::string out = "\nSubcommands:\n";
    for (const CLI::App* sub : app->get_subcommands({}))
      out += entry(sub->get_name(), sub->get_description());
    return out;
  }

  // "  NAME      description", the description wrapped from kDescColumn; a
  // name too long for its column gets the description on the next line.
  static std::string entry(const std::string& name, const std::string& desc) {
    std::string head = "  " + name;
    if (text_columns(head) + 2 > kDescColumn) {
      if (desc.empty()) return head + "\n";
      return head + "\n" + wrap_text(std::string(kDescColumn, ' '), desc, kWidth);
    }
    head.resize(kDescColumn, ' ');
    return wrap_text(head, desc, kWidth);
  }

  static std::string to_upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }

  HelpLayout layout_;
};

}  // namespace

std::shared_ptr<CLI::FormatterBase> make_help_formatter(HelpLayout layout) {
  return std::make_shared<HelpFormatter>(std::move(layout));
}

}  // namespace rlock
