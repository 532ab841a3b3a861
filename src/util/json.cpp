#include "util/json.h"

#include <ddp/errors.h>

#include <cstdint>

#include "util/numbers.h"

namespace ddp::util {

const char* JsonValue::kind_name(Kind k) {
  switch (k) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kNumber: return "a number";
    case Kind::kString: return "a string";
    case Kind::kArray: return "an array";
    case Kind::kObject: return "an object";
  }
  return "?";
}

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

const std::string& JsonValue::string_value(const std::string& what) const {
  if (kind_ != Kind::kString) throw ConfigError(what + " is " + kind_name(kind_) + ", not a string");
  return text_;
}

const JsonValue& JsonValue::at(const std::string& key, const std::string& what) const {
  if (kind_ != Kind::kObject) throw ConfigError(what + " is " + kind_name(kind_) + ", not an object");
  const JsonValue* v = find(key);
  if (!v) throw ConfigError(what + ": \"" + printable(key, 64) + "\" is missing");
  return *v;
}

// A recursive-descent parser over the bytes; depth is bounded, so recursion is too.
class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& source, const JsonLimits& limits)
      : s_(text), source_(source), limits_(limits) {}

  JsonValue document() {
    if (s_.size() > limits_.max_bytes)
      throw ConfigError(source_ + ": " + std::to_string(s_.size()) + " bytes, more than the " +
                        std::to_string(limits_.max_bytes) + " a JSON document may have here");
    skip_space();
    JsonValue v = value(0);
    skip_space();
    if (i_ != s_.size()) fail("unexpected bytes after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError(source_ + ": not valid JSON at offset " + std::to_string(i_) + ": " + why);
  }

  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++i_;
  }

  void expect_word(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("expected a value");
    i_ += word.size();
  }

  JsonValue value(int depth) {
    if (at_end()) fail("unexpected end of input, expected a value");
    JsonValue v;
    switch (peek()) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': v.kind_ = JsonValue::Kind::kString; v.text_ = string(); return v;
      case 't': expect_word("true"); v.kind_ = JsonValue::Kind::kBool; v.boolean_ = true; return v;
      case 'f': expect_word("false"); v.kind_ = JsonValue::Kind::kBool; return v;
      case 'n': expect_word("null"); return v;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind_ = JsonValue::Kind::kNumber;
          v.text_ = number();
          return v;
        }
        fail("expected a value, found '" + printable(std::string(1, peek())) + "'");
    }
  }

  void check_depth(int depth) {
    if (depth > limits_.max_depth) fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
  }

  JsonValue object(int depth) {
    check_depth(depth);
    JsonValue v;
    v.kind_ = JsonValue::Kind::kObject;
    ++i_;  // '{'
    skip_space();
    if (!at_end() && peek() == '}') {
      ++i_;
      return v;
    }
    while (true) {
      skip_space();
      if (at_end() || peek() != '"') fail("expected a member name (a string)");
      const size_t key_at = i_;
      std::string key = string();
      if (v.find(key)) {
        i_ = key_at;
        fail("duplicate member name \"" + printable(key, 64) + "\"");
      }
      skip_space();
      if (at_end() || peek() != ':') fail("expected ':' after a member name");
      ++i_;
      skip_space();
      JsonValue member = value(depth);
      v.members_.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (!at_end() && peek() == ',') {
        ++i_;
        continue;
      }
      if (!at_end() && peek() == '}') {
        ++i_;
        return v;
      }
      fail("expected ',' or '}' in an object");
    }
  }

  JsonValue array(int depth) {
    check_depth(depth);
    JsonValue v;
    v.kind_ = JsonValue::Kind::kArray;
    ++i_;  // '['
    skip_space();
    if (!at_end() && peek() == ']') {
      ++i_;
      return v;
    }
    while (true) {
      skip_space();
      v.items_.push_back(value(depth));
      skip_space();
      if (!at_end() && peek() == ',') {
        ++i_;
        continue;
      }
      if (!at_end() && peek() == ']') {
        ++i_;
        return v;
      }
      fail("expected ',' or ']' in an array");
    }
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? ; the source text is kept.
  std::string number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (!at_end() && peek() >= '0' && peek() <= '9') ++i_;
      return i_ - from;
    };
    if (peek() == '-') ++i_;
    if (at_end()) fail("a number ends after '-'");
    if (peek() == '0') {
      ++i_;
      if (!at_end() && peek() >= '0' && peek() <= '9') fail("a number has a leading zero");
    } else if (digits() == 0) {
      fail("expected a digit");
    }
    if (!at_end() && peek() == '.') {
      ++i_;
      if (digits() == 0) fail("expected a digit after '.'");
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++i_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++i_;
      if (digits() == 0) fail("expected a digit in the exponent");
    }
    return std::string(s_.substr(start, i_ - start));
  }

  unsigned hex4() {
    if (s_.size() - i_ < 4) fail("\\u needs four hex digits");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      code <<= 4;
      if (c >= '0' && c <= '9') code |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') code |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') code |= static_cast<unsigned>(c - 'A' + 10);
      else { --i_; fail("\\u needs four hex digits"); }
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence at i_ (not ASCII), copied to out: shortest form, no surrogates, <= U+10FFFF.
  void utf8_sequence(std::string& out) {
    const auto b0 = static_cast<unsigned char>(peek());
    int extra;
    unsigned cp, min;
    if (b0 >= 0xC2 && b0 <= 0xDF) { extra = 1; cp = b0 & 0x1F; min = 0x80; }
    else if (b0 >= 0xE0 && b0 <= 0xEF) { extra = 2; cp = b0 & 0x0F; min = 0x800; }
    else if (b0 >= 0xF0 && b0 <= 0xF4) { extra = 3; cp = b0 & 0x07; min = 0x10000; }
    else fail("invalid UTF-8 byte");
    if (s_.size() - i_ <= static_cast<size_t>(extra)) fail("truncated UTF-8 sequence");
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_ + k]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8 sequence");
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8 sequence");
    out.append(s_.substr(i_, extra + 1));
    i_ += extra + 1;
  }

  std::string string() {
    ++i_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = peek();
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control byte in a string (escape it)");
      if (static_cast<unsigned char>(c) >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      ++i_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a lone low surrogate in \\u escapes");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") fail("a high surrogate without its low half");
            i_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --i_;
          fail(std::string("unknown escape \\") + printable(std::string(1, e)));
      }
    }
  }

  std::string_view s_;
  const std::string& source_;
  const JsonLimits& limits_;
  size_t i_ = 0;
};

JsonValue parse_json(std::string_view text, const std::string& source, const JsonLimits& limits) {
  return JsonParser(text, source, limits).document();
}

std::string json_quote(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20) { out += "\\u00"; out += kHex[u >> 4]; out += kHex[u & 15]; }
    else out += c;
  }
  return out + "\"";
}

}  // namespace ddp::util
