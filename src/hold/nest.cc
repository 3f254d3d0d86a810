#include "hold/nest.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/text.h"
#include "lock/script_args.h"
#include "lock/scripts.h"
#include "lock/single.h"

namespace rlock {

namespace {

SingleLock* single(Lock* l) {
  auto* s = dynamic_cast<SingleLock*>(l);
  return s && s->names().layout == Layout::Rlock ? s : nullptr;
}

int64_t integer(const Reply& r, const char* what) {
  if (r.type != Reply::Type::Integer) throw_protocol(fmt::format("{}: not an integer", what));
  return r.integer;
}

}  // namespace

namespace {

std::vector<NestedHold> parse_holds(const Reply& r) {
  std::vector<NestedHold> out;
  auto& e = r.as_array("a list of nested holds");
  for (size_t i = 0; i + 1 < e.size(); i += 2) {
    if (e[i].type != Reply::Type::String || e[i + 1].type != Reply::Type::Integer) continue;
    // "ID PID HOST"
    const std::string& m = e[i].str;
    size_t a = m.find(' ');
    size_t b = a == std::string::npos ? a : m.find(' ', a + 1);
    if (b == std::string::npos) continue;
    std::string pid = m.substr(a + 1, b - a - 1);
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    out.push_back(
        {m.substr(0, a), m.substr(b + 1), std::atol(pid.c_str()), Millis(e[i + 1].integer)});
  }
  return out;
}

void list_holds(SingleLock& s, const std::string& outer, Done<Reply> d) {
  run_script(s.client(), nest_list_script(), keys_of(s.names()),
             NestArgs{.op = "list", .outer = outer}.to_argv(), [d = std::move(d)](Result res) {
               Outcome<Reply> o;
               try {
                 o.value = expect_ok(res, "nest script");
               } catch (const Error& e) {
                 o.error = e;
               }
               d(std::move(o));
             });
}

}  // namespace

std::vector<NestedHold> nested_holds(Loop& loop, Lock& lock, const std::string& outer) {
  SingleLock* s = single(&lock);
  if (!s) return {};
  Reply r = wait_for<Reply>(loop, [&](Done<Reply> d) { list_holds(*s, outer, std::move(d)); });
  return parse_holds(r);
}

void each_nested_hold(Lock& lock, const std::string& outer,
                      std::function<void(const NestedHold&)> visit) {
  for (Lock* part : lock.parts()) {
    SingleLock* s = single(part);
    if (!s) continue;
    list_holds(*s, outer, [visit](Outcome<Reply> o) {
      if (o.error) return;
      try {
        for (const NestedHold& h : parse_holds(o.value)) visit(h);
      } catch (const Error&) {
        // a reply of another shape: nobody to tell
      }
    });
  }
}

NestedLock::NestedLock(std::unique_ptr<Lock> inner, std::vector<std::string> outer)
    : Lock(inner->names(), inner->limit()),
      inner_(std::move(inner)),
      parts_(inner_->parts()),
      outer_(std::move(outer)) {
  history_ = inner_->history();
}

bool NestedLock::supported(Lock& lock) {
  for (Lock* p : lock.parts())
    if (!single(p)) return false;
  return true;
}

void NestedLock::each(const std::string& op, Millis ttl, Done<std::vector<Step>> done,
                      Millis timeout) {
  auto steps = std::make_shared<std::vector<Step>>();
  auto next = std::make_shared<std::function<void()>>();
  // The function refers to itself through a weak pointer: no cycle.
  std::weak_ptr<std::function<void()>> weak = next;
  *next = [this, op, ttl, done, timeout, steps, weak] {
    size_t i = steps->size();
    if (i == parts_.size()) return done(Outcome<std::vector<Step>>{std::nullopt, *steps});
    SingleLock* s = single(parts_[i]);
    Args argv = NestArgs{.op = op,
                         .outer = outer_[i],
                         .member = member_,
                         .ttl = ttl,
                         .channel = s->names().channel,
                         .history = history_}
                    .to_argv();
    auto self = weak.lock();
    run_script(
        s->client(), nest_script(), keys_of(s->names()), argv,
        [op, done, steps, self](Result res) {
          Step st;
          try {
            auto& e = expect_ok(res, "nest script").as_array("a nest reply", 1);
            int64_t code = integer(e[0], "a nest reply");
            st.held = code != 0;
            if (op == "hold" && st.held) {
              if (e.size() < 3) throw_protocol("a nest reply: too short");
              st.ttl = Millis(integer(e[1], "a nest reply"));
              st.fence = integer(e[2], "a nest reply");
            }
          } catch (const Error& err) {
            return done(Outcome<std::vector<Step>>{err, {}});
          }
          steps->push_back(st);
          // An end goes on to every key; a hold stops where it failed.
          if (!st.held && op == "hold")
            return done(Outcome<std::vector<Step>>{std::nullopt, *steps});
          (*self)();
        },
        timeout);
  };
  (*next)();
}

void NestedLock::do_acquire(const std::string& token, Millis ttl, bool, const HolderInfo& info,
                            long, Done<AcquireReply> done, Millis timeout) {
  member_ = fmt::format("{} {} {}", token, info.pid, info.host);
  each(
      "hold", ttl,
      [this, done = std::move(done)](Outcome<std::vector<Step>> o) {
        Outcome<AcquireReply> out;
        out.error = o.error;
        if (!o.error) {
          bool held = o.value.size() == parts_.size() && !o.value.empty() && o.value.back().held;
          out.value.state = held ? AcquireReply::State::Acquired : AcquireReply::State::Taken;
          if (held) {
            fences_.clear();
            Millis shortest = o.value.front().ttl;
            for (const Step& s : o.value) {
              fences_.push_back(s.fence);
              shortest = std::min(shortest, s.ttl);
            }
            out.value.fence = fences_.front();
            out.value.ttl = shortest;
          }
        }
        done(std::move(out));
      },
      timeout);
}

void NestedLock::do_extend(const std::string&, Millis ttl, Done<ExtendReply> done, Millis timeout) {
  each(
      "hold", ttl,
      [this, done = std::move(done)](Outcome<std::vector<Step>> o) {
        Outcome<ExtendReply> out;
        out.error = o.error;
        if (!o.error) {
          out.value.held = o.value.size() == parts_.size() && o.value.back().held;
          if (out.value.held) {
            out.value.ttl = o.value.front().ttl;
            for (const Step& s : o.value) out.value.ttl = std::min(out.value.ttl, s.ttl);
            out.value.fence = o.value.front().fence;
          }
        }
        done(std::move(out));
      },
      timeout);
}

void NestedLock::do_release(const std::string&, Millis, Done<ReleaseReply> done, Millis timeout,
                            int, Millis, const std::string&) {
  each(
      "end", Millis(0),
      [this, done = std::move(done)](Outcome<std::vector<Step>> o) {
        Outcome<ReleaseReply> out;
        out.error = o.error;
        bool all = o.value.size() == parts_.size();
        for (const Step& s : o.value) all = all && s.held;
        if (!o.error)
          out.value.state = all ? ReleaseReply::State::Released : ReleaseReply::State::NotHeld;
        done(std::move(out));
      },
      timeout);
}

}  // namespace rlock
