#include "util/error_file.h"

#include <ddp/errors.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "util/files.h"
#include "util/json.h"
#include "util/numbers.h"

namespace ddp::util {
namespace {

constexpr size_t kMaxRecordBytes = 4u << 20;

// Python's json.load reads the file as UTF-8 and fails on anything else, and torch's agent then
// fails too: a message that carries stray bytes (a hostile flag value, a path) gets each byte of an
// invalid sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok && len > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string error_record_json(const ErrorRecord& r) {
  if (r.old_shape && !r.text.empty()) return r.text;
  std::string out = "{\"message\": {\"message\": " + json_quote(valid_utf8(r.message)) +
                    ", \"extraInfo\": {\"py_callstack\": " + json_quote(valid_utf8(r.callstack)) +
                    ", \"timestamp\": \"" + std::to_string(r.timestamp) + "\"}";
  if (r.error_code) out += ", \"errorCode\": " + std::to_string(*r.error_code);
  return out + "}}";
}

ErrorRecord parse_error_file(std::string_view text, const std::string& source) {
  JsonValue doc = parse_json(text, source, JsonLimits{kMaxRecordBytes, 64});
  ErrorRecord r;
  r.text = std::string(text);
  const JsonValue& message = doc.at("message", source);
  // ProcessFailure takes int() of the timestamp: a number, or a string of digits.
  auto whole_seconds = [&](const JsonValue* v, const std::string& what) -> int64_t {
    if (!v) return 0;
    if (!v->is(JsonValue::Kind::kNumber) && !v->is(JsonValue::Kind::kString))
      throw ConfigError(source + ": " + what + " is " + JsonValue::kind_name(v->kind()) + ", not a number");
    return parse_int(source + ": " + what, v->text(), 0, INT64_MAX);
  };
  if (message.is(JsonValue::Kind::kString)) {
    r.old_shape = true;
    r.message = message.text();
    r.timestamp = whole_seconds(doc.find("timestamp"), "\"timestamp\"");
    return r;
  }
  r.message = message.at("message", source + ": \"message\"").string_value(source + ": \"message.message\"");
  const JsonValue& extra = message.at("extraInfo", source + ": \"message\"");
  r.timestamp = whole_seconds(&extra.at("timestamp", source + ": \"message.extraInfo\""),
                              "\"message.extraInfo.timestamp\"");
  if (const JsonValue* cs = extra.find("py_callstack"))
    r.callstack = cs->string_value(source + ": \"message.extraInfo.py_callstack\"");
  if (const JsonValue* code = message.find("errorCode")) {
    if (!code->is(JsonValue::Kind::kNumber))
      throw ConfigError(source + ": \"message.errorCode\" is " + JsonValue::kind_name(code->kind()) + ", not a number");
    r.error_code = static_cast<int>(parse_int(source + ": \"message.errorCode\"", code->text(), -255, 255));
  }
  return r;
}

std::optional<ErrorRecord> read_error_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw ConfigError(path + ": cannot read: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw ConfigError(path + ": not a regular file, not an error record");
  try {
    return parse_error_file(read_file(path, kMaxRecordBytes), path);
  } catch (const DataError& e) {
    throw ConfigError(e.what());  // one class for every unusable record (docs: error files)
  }
}

void write_error_file(const std::string& path, const std::string& json) {
  write_file_atomically(path, {json}, Durability::kRenamed);
}

}  // namespace ddp::util
