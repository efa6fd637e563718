/* SPDX-License-Identifier: MIT */
#include "time_spec.h"

#include <time.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>

namespace core_timeline::ctl_query {

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

/* The named days: midnight today, yesterday, tomorrow; "now". */
std::optional<Result<std::int64_t>> named_day(std::string_view s, std::string_view text, std::int64_t now_usec) {
  if (s == "now") return Result<std::int64_t>(now_usec);
  const int days = s == "today" ? 0 : s == "yesterday" ? -1 : s == "tomorrow" ? 1 : 2;
  if (days == 2) return std::nullopt;
  auto m = midnight(now_usec, days);
  if (!m) return Result<std::int64_t>(bad(text, "the local date cannot be computed"));
  return Result<std::int64_t>(*m);
}

/* +SPAN, -SPAN, "SPAN ago", "SPAN left": relative to now. */
std::optional<Result<std::int64_t>> relative(std::string_view s, std::string_view text, std::int64_t now_usec) {
  int sign = 0;
  std::string_view span_text;
  if (s.front() == '+' || s.front() == '-') {
    sign = s.front() == '+' ? 1 : -1;
    span_text = s.substr(1);
  } else if (s.size() > 4 && s.ends_with(" ago")) {
    sign = -1;
    span_text = s.substr(0, s.size() - 4);
  } else if (s.size() > 5 && s.ends_with(" left")) {
    sign = 1;
    span_text = s.substr(0, s.size() - 5);
  }
  if (sign == 0) return std::nullopt;
  auto span = parse_time_span(span_text);
  if (!span) return Result<std::int64_t>(bad(text, "expected a time span such as 1h or 30min after the sign"));
  std::int64_t r = 0;
  if (add_overflows(now_usec, sign * *span, &r)) return Result<std::int64_t>(bad(text, "too far from now"));
  return Result<std::int64_t>(r);
}

/* A leading weekday ("Mon ", "Monday "), removed from `s`: 0 Sunday..6. */
std::optional<int> take_weekday(std::string_view &s) {
  for (std::size_t i = 0; i < kWeekdays.size(); ++i)
    for (std::string_view w : {std::string_view(kWeekdaysLong[i]), std::string_view(kWeekdays[i])})
      if (s.size() > w.size() && s.starts_with(w) && s[w.size()] == ' ') {
        s.remove_prefix(w.size() + 1);
        return static_cast<int>(i);
      }
  return std::nullopt;
}

enum class Zone { kLocal, kUtc };

/* A trailing zone, removed from `s`: "Z", " Z", " UTC", or the local
 * zone's abbreviation (tzname, tzset(3)); nullopt for another one. */
std::optional<Zone> take_zone(std::string_view &s) {
  for (std::string_view z : {"Z", " Z", " UTC"})
    if (s.size() > z.size() && s.ends_with(z)) {
      s.remove_suffix(z.size());
      return Zone::kUtc;
    }
  const auto space = s.rfind(' ');
  if (space == std::string_view::npos || s.find(':') == std::string_view::npos || space < s.rfind(':'))
    return Zone::kLocal;  // no word after the time
  const std::string_view word = s.substr(space + 1);
  tzset();
  if (word != tzname[0] && word != tzname[1]) return std::nullopt;
  s.remove_suffix(word.size() + 1);
  return Zone::kLocal;
}

/* Trailing ".DIGITS" after the seconds, removed from `s`: microseconds
 * (digits past the sixth are dropped); -1 when there is none, -2 when the
 * '.' has no digits. */
std::int64_t take_fraction(std::string_view &s) {
  const auto dot = s.rfind('.');
  if (dot == std::string_view::npos || s.find(':') == std::string_view::npos || dot < s.rfind(':')) return -1;
  const std::string_view digits = s.substr(dot + 1);
  if (digits.empty()) return -2;
  std::int64_t usec = 0, scale = 100000;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(digits[i]))) return -2;
    if (i < 6) usec += (digits[i] - '0') * scale;
    scale /= 10;
  }
  s.remove_suffix(digits.size() + 1);
  return usec;
}

/* The date and time forms, tried in order as systemd's parse_timestamp()
 * (src/basic/time-util.c) tries its table of strptime(3) formats; each must
 * take the whole text.  `seconds`: the form ends in seconds (a fraction
 * may follow); `date`: it has one (else: today). */
struct Form {
  const char *format;
  bool seconds, date;
};
constexpr std::array<Form, 7> kForms{{
    {"%Y-%m-%d %H:%M:%S", true, true},
    {"%Y-%m-%dT%H:%M:%S", true, true},
    {"%Y-%m-%d %H:%M", false, true},
    {"%Y-%m-%dT%H:%M", false, true},
    {"%Y-%m-%d", false, true},
    {"%H:%M:%S", true, false},
    {"%H:%M", false, false},
}};

/* The broken-down time of `s` in one of kForms; nullopt if none takes it.
 * strptime(3) checks the ranges of each field (hour 0-23, minute 0-59...). */
std::optional<Form> match_form(const std::string &s, struct tm &tm) {
  for (const Form &f : kForms) {
    struct tm t {};
    const char *end = strptime(s.c_str(), f.format, &t);
    if (end && *end == '\0' && std::isdigit(static_cast<unsigned char>(s.front())) &&
        (!f.date || (s.size() >= 10 && s[4] == '-' && s[7] == '-'))) {
      tm = t;
      return f;
    }
  }
  return std::nullopt;
}

/* Seconds since the epoch of `tm` in `zone` (mktime(3), timegm(3)); an
 * error for a day that does not exist (2026-02-30 normalized) or that
 * does not fall on `weekday`. */
Result<std::int64_t> to_epoch(struct tm tm, Zone zone, std::optional<int> weekday, std::string_view text) {
  const struct tm wanted = tm;
  tm.tm_isdst = -1;
  const time_t t = zone == Zone::kUtc ? timegm(&tm) : mktime(&tm);
  if (t == static_cast<time_t>(-1) && !(wanted.tm_year == 69 && wanted.tm_mon == 11 && wanted.tm_mday == 31))
    return bad(text, "not a representable time");
  if (tm.tm_year != wanted.tm_year || tm.tm_mon != wanted.tm_mon || tm.tm_mday != wanted.tm_mday)
    return bad(text, "no such day");
  if (weekday && tm.tm_wday != *weekday) return bad(text, "the weekday does not match the date");
  return static_cast<std::int64_t>(t);
}

/* [WEEKDAY ] (DATE[( |T)TIME] | TIME)[.FRACTION][ ZONE] */
Result<std::int64_t> absolute(std::string_view s, std::string_view text, std::int64_t now_usec) {
  const std::optional<int> weekday = take_weekday(s);
  const std::optional<Zone> zone = take_zone(s);
  if (!zone) return bad(text, "unknown time zone (use UTC or the local zone)");
  const std::int64_t frac_usec = take_fraction(s);
  if (frac_usec == -2) return bad(text, "expected digits after the seconds' '.'");
  struct tm tm {};
  const auto form = s.empty() ? std::nullopt : match_form(std::string(s), tm);
  if (!form || (frac_usec >= 0 && !form->seconds)) return bad(text, "not a date, a time or a relative time");
  if (!form->date) {
    const time_t now = static_cast<time_t>(now_usec / kUsecPerSec);
    struct tm today {};
    if (!(*zone == Zone::kUtc ? gmtime_r(&now, &today) : localtime_r(&now, &today))) return bad(text, "no current date");
    tm.tm_year = today.tm_year;
    tm.tm_mon = today.tm_mon;
    tm.tm_mday = today.tm_mday;
  }
  auto t = to_epoch(tm, *zone, weekday, text);
  if (!t) return t;
  return *t * kUsecPerSec + std::max<std::int64_t>(frac_usec, 0);
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
  const std::string_view s = trim(text);
  if (s.empty()) return bad(text, "empty");
  if (auto day = named_day(s, text, now_usec)) return std::move(*day);
  if (s.front() == '@') {
    auto span = parse_time_span(s.substr(1));
    if (!span || s.size() < 2 || !std::isdigit(static_cast<unsigned char>(s[1])))
      return bad(text, "expected seconds since the epoch after '@'");
    return *span;
  }
  if (auto rel = relative(s, text, now_usec)) return std::move(*rel);
  return absolute(s, text, now_usec);
}

std::string format_time(std::int64_t usec) {
  time_t t = static_cast<time_t>(usec / kUsecPerSec);
  struct tm tm {};
  if (!localtime_r(&t, &tm)) return "-";
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0) return "-";
  return buf;
}

std::string format_time_usec(std::int64_t usec) {
  if (usec < 0) return "-";
  time_t t = static_cast<time_t>(usec / kUsecPerSec);
  struct tm tm {};
  if (!localtime_r(&t, &tm)) return "-";
  char day[64], zone[16];
  if (std::strftime(day, sizeof day, "%a %Y-%m-%d %H:%M:%S", &tm) == 0 || std::strftime(zone, sizeof zone, "%Z", &tm) == 0)
    return "-";
  char out[96];
  std::snprintf(out, sizeof out, "%s.%06lld %s", day, static_cast<long long>(usec % kUsecPerSec), zone);
  return out;
}

}  // namespace core_timeline::ctl_query
