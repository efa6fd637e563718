/* SPDX-License-Identifier: MIT */
#include "time_spec.h"

#include <time.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>

namespace core_timeline::ctlq {

namespace {

constexpr std::int64_t kUsecPerSec = 1000000;

struct Unit {
  const char *name;
  std::int64_t usec;
};

/* systemd's parse_time() table; longer names first so "min" wins over "m"
 * and "ms" over "m". */
constexpr std::array<Unit, 30> kUnits{{
    {"seconds", kUsecPerSec},
    {"second", kUsecPerSec},
    {"sec", kUsecPerSec},
    {"s", kUsecPerSec},
    {"minutes", 60 * kUsecPerSec},
    {"minute", 60 * kUsecPerSec},
    {"min", 60 * kUsecPerSec},
    {"months", 2629800 * kUsecPerSec},
    {"month", 2629800 * kUsecPerSec},
    {"M", 2629800 * kUsecPerSec},
    {"msec", 1000},
    {"ms", 1000},
    {"m", 60 * kUsecPerSec},
    {"hours", 3600 * kUsecPerSec},
    {"hour", 3600 * kUsecPerSec},
    {"hr", 3600 * kUsecPerSec},
    {"h", 3600 * kUsecPerSec},
    {"days", 86400 * kUsecPerSec},
    {"day", 86400 * kUsecPerSec},
    {"d", 86400 * kUsecPerSec},
    {"weeks", 7 * 86400 * kUsecPerSec},
    {"week", 7 * 86400 * kUsecPerSec},
    {"w", 7 * 86400 * kUsecPerSec},
    {"years", 31557600 * kUsecPerSec},
    {"year", 31557600 * kUsecPerSec},
    {"y", 31557600 * kUsecPerSec},
    {"usec", 1},
    {"us", 1},
    {"\xc2\xb5s", 1},
    {"nsec", 0},  // placeholder, rejected below (no sub-microsecond times)
}};

constexpr std::array<const char *, 7> kWeekdays{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<const char *, 7> kWeekdaysLong{"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                      "Thursday", "Friday", "Saturday"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool consume(std::string_view &s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

/* Exactly `digits` decimal digits (digits == 0: one or more, at most 9). */
std::optional<int> take_number(std::string_view &s, std::size_t digits) {
  std::size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  if (n == 0 || (digits && n != digits) || n > 9) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) v = v * 10 + (s[i] - '0');
  s.remove_prefix(n);
  return v;
}

Error bad(std::string_view text, const char *what) {
  return invalid("cannot parse time \"" + std::string(text) + "\": " + what +
                 " (try \"YYYY-MM-DD HH:MM:SS\", \"today\", \"yesterday\", \"-1h\" or \"@EPOCH\")");
}

bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t *out) { return __builtin_add_overflow(a, b, out); }

/* Local (or UTC) midnight of the day `now_usec` falls in, shifted by
 * `days` days; mktime normalizes tm_mday and handles DST changes. */
std::optional<std::int64_t> midnight(std::int64_t now_usec, int days) {
  time_t now = static_cast<time_t>(now_usec / kUsecPerSec);
  struct tm tm {};
  if (!localtime_r(&now, &tm)) return std::nullopt;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_mday += days;
  tm.tm_isdst = -1;
  time_t t = mktime(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(t) * kUsecPerSec;
}

}  // namespace

std::int64_t realtime_now_usec() noexcept {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * kUsecPerSec + ts.tv_nsec / 1000;
}

Result<std::int64_t> parse_time_span(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return invalid("empty time span");
  std::int64_t total = 0;
  while (!s.empty()) {
    // number [. fraction]
    std::size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 0 || n > 18) return bad(text, "expected a number");
    std::int64_t whole = 0;
    for (std::size_t i = 0; i < n; ++i) whole = whole * 10 + (s[i] - '0');
    s.remove_prefix(n);
    double frac = 0;
    if (!s.empty() && s.front() == '.') {
      s.remove_prefix(1);
      std::size_t m = 0;
      double scale = 0.1;
      while (m < s.size() && std::isdigit(static_cast<unsigned char>(s[m]))) {
        if (m < 9) frac += (s[m] - '0') * scale;
        scale /= 10;
        ++m;
      }
      if (m == 0) return bad(text, "expected digits after '.'");
      s.remove_prefix(m);
    }
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    std::int64_t unit = kUsecPerSec;  // no unit: seconds, as systemd
    bool found = false;
    for (const auto &u : kUnits) {
      std::string_view name = u.name;
      if (s.substr(0, name.size()) != name) continue;
      // The unit must end here: "min" must not match the start of "minx".
      std::string_view rest = s.substr(name.size());
      if (!rest.empty() && std::isalpha(static_cast<unsigned char>(rest.front()))) continue;
      if (u.usec == 0) return bad(text, "nanoseconds are finer than the timeline's microseconds");
      unit = u.usec;
      s = rest;
      found = true;
      break;
    }
    if (!found && !s.empty() && !std::isdigit(static_cast<unsigned char>(s.front())))
      return bad(text, "unknown time unit");
    std::int64_t part = 0;
    if (__builtin_mul_overflow(whole, unit, &part)) return bad(text, "too large");
    std::int64_t frac_part = static_cast<std::int64_t>(std::llround(frac * static_cast<double>(unit)));
    if (add_overflows(part, frac_part, &part) || add_overflows(total, part, &total)) return bad(text, "too large");
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  }
  return total;
}

Result<std::int64_t> parse_time_spec(std::string_view text, std::int64_t now_usec) {
  std::string_view s = trim(text);
  if (s.empty()) return bad(text, "empty");

  if (s == "now") return now_usec;
  if (s == "today" || s == "yesterday" || s == "tomorrow") {
    auto m = midnight(now_usec, s == "today" ? 0 : s == "yesterday" ? -1 : 1);
    if (!m) return bad(text, "the local date cannot be computed");
    return *m;
  }

  if (s.front() == '@') {
    auto span = parse_time_span(s.substr(1));
    if (!span || s.size() < 2 || !std::isdigit(static_cast<unsigned char>(s[1])))
      return bad(text, "expected seconds since the epoch after '@'");
    return *span;
  }

  // Relative: +SPAN, -SPAN, "SPAN ago", "SPAN left".
  int sign = 0;
  std::string_view span_text;
  if (s.front() == '+' || s.front() == '-') {
    sign = s.front() == '+' ? 1 : -1;
    span_text = s.substr(1);
  } else if (s.size() > 4 && s.substr(s.size() - 4) == " ago") {
    sign = -1;
    span_text = s.substr(0, s.size() - 4);
  } else if (s.size() > 5 && s.substr(s.size() - 5) == " left") {
    sign = 1;
    span_text = s.substr(0, s.size() - 5);
  }
  if (sign != 0) {
    auto span = parse_time_span(span_text);
    if (!span) return bad(text, "expected a time span such as 1h or 30min after the sign");
    std::int64_t r = 0;
    if (add_overflows(now_usec, sign * *span, &r)) return bad(text, "too far from now");
    return r;
  }

  // Absolute: [WEEKDAY ] (DATE[( |T)TIME] | TIME)[ ZONE]
  std::optional<int> weekday;
  for (int i = 0; i < 7 && !weekday; ++i) {
    for (std::string_view w : {std::string_view(kWeekdaysLong[static_cast<std::size_t>(i)]),
                               std::string_view(kWeekdays[static_cast<std::size_t>(i)])}) {
      if (s.size() > w.size() && s.substr(0, w.size()) == w && s[w.size()] == ' ') {
        weekday = i;
        s.remove_prefix(w.size() + 1);
        break;
      }
    }
  }

  struct tm tm {};
  bool have_date = false;
  std::int64_t frac_usec = 0;
  {
    std::string_view probe = s;
    auto y = take_number(probe, 4);
    if (y && consume(probe, "-")) {
      auto mo = take_number(probe, 2);
      if (!mo || !consume(probe, "-")) return bad(text, "expected YYYY-MM-DD");
      auto d = take_number(probe, 2);
      if (!d) return bad(text, "expected YYYY-MM-DD");
      tm.tm_year = *y - 1900;
      tm.tm_mon = *mo - 1;
      tm.tm_mday = *d;
      have_date = true;
      s = probe;
      if (!s.empty() && (s.front() == ' ' || s.front() == 'T') && s.size() > 1 &&
          std::isdigit(static_cast<unsigned char>(s[1])))
        s.remove_prefix(1);
    }
  }
  bool have_time = false;
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s.front()))) {
    auto h = take_number(s, 2);
    if (!h || !consume(s, ":")) return bad(text, "expected HH:MM[:SS]");
    auto mi = take_number(s, 2);
    if (!mi) return bad(text, "expected HH:MM[:SS]");
    int sec = 0;
    if (consume(s, ":")) {
      auto se = take_number(s, 2);
      if (!se) return bad(text, "expected HH:MM:SS");
      sec = *se;
      if (consume(s, ".")) {
        std::size_t n = 0;
        std::int64_t scale = 100000;
        while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) {
          if (n < 6) {
            frac_usec += (s[n] - '0') * scale;
            scale /= 10;
          }
          ++n;
        }
        if (n == 0) return bad(text, "expected digits after the seconds' '.'");
        s.remove_prefix(n);
      }
    }
    if (*h > 23 || *mi > 59 || sec > 60) return bad(text, "hour, minute or second out of range");
    tm.tm_hour = *h;
    tm.tm_min = *mi;
    tm.tm_sec = sec;
    have_time = true;
  }
  if (!have_date && !have_time) return bad(text, "not a date, a time or a relative time");

  bool utc = false;
  if (consume(s, "Z") || consume(s, " UTC") || consume(s, " Z")) {
    utc = true;
  } else if (consume(s, " ")) {
    tzset();
    if (s == tzname[0] || s == tzname[1]) s = {};
    else return bad(text, "unknown time zone (use UTC or the local zone)");
  }
  if (!s.empty()) return bad(text, "unexpected text at the end");

  if (!have_date) {
    time_t now = static_cast<time_t>(now_usec / kUsecPerSec);
    struct tm today {};
    if (!(utc ? gmtime_r(&now, &today) : localtime_r(&now, &today))) return bad(text, "no current date");
    tm.tm_year = today.tm_year;
    tm.tm_mon = today.tm_mon;
    tm.tm_mday = today.tm_mday;
  }
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
    return bad(text, "month or day out of range");

  const struct tm wanted = tm;
  tm.tm_isdst = -1;
  time_t t = utc ? timegm(&tm) : mktime(&tm);
  if (t == static_cast<time_t>(-1) && !(wanted.tm_year == 69 && wanted.tm_mon == 11 && wanted.tm_mday == 31))
    return bad(text, "not a representable time");
  if (tm.tm_year != wanted.tm_year || tm.tm_mon != wanted.tm_mon || tm.tm_mday != wanted.tm_mday)
    return bad(text, "no such day");
  if (weekday && tm.tm_wday != *weekday) return bad(text, "the weekday does not match the date");
  return static_cast<std::int64_t>(t) * kUsecPerSec + frac_usec;
}

std::string format_time(std::int64_t usec) {
  time_t t = static_cast<time_t>(usec / kUsecPerSec);
  struct tm tm {};
  if (!localtime_r(&t, &tm)) return "-";
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0) return "-";
  return buf;
}

}  // namespace core_timeline::ctlq
