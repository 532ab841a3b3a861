#pragma once
// The one JSON reader: strict RFC 8259 (no comments, no trailing commas, no NaN, no duplicate keys,
// UTF-8 checked), with limits on size and nesting so outside bytes cannot exhaust memory or the
// stack. Numbers keep their source text (no rounding: "0.010" stays "0.010"). Every failure is a
// ConfigError "<source>: not valid JSON at offset N: <why>", or "<source>: <what> is not <kind>" from
// the typed accessors.
//
//   auto doc = ddp::util::parse_json(text, "/opt/ml/input/config/resourceconfig.json");
//   const JsonValue& hosts = doc.at("hosts", "resourceconfig.json");        // ConfigError when absent
//   for (const JsonValue& h : hosts.array_items()) names.push_back(h.string_value());
//
//   std::string quoted = ddp::util::json_quote("algo-1");                   // "\"algo-1\""
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::util {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  /// "null", "a boolean", "a number", "a string", "an array", "an object": for messages.
  static const char* kind_name(Kind k);

  bool bool_value() const { return boolean_; }
  /// A string's decoded UTF-8 content, or a number's source text.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& array_items() const { return items_; }
  /// An object's members in file order (keys are unique).
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  /// The member `key` of an object, or nullptr (also for a non-object).
  const JsonValue* find(const std::string& key) const;

  /// A value of the given kind: its text for a string (or number), ConfigError "<what> is <kind>, not
  /// a string" otherwise.
  const std::string& string_value(const std::string& what) const;
  /// `key` of this object, or ConfigError "<what>: \"key\" is missing".
  const JsonValue& at(const std::string& key, const std::string& what) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool boolean_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

struct JsonLimits {
  size_t max_bytes = 4u << 20;  ///< larger documents are refused before parsing
  int max_depth = 64;           ///< arrays and objects nested deeper are refused
};

/// Parses one JSON document (surrounding whitespace allowed). `source` names it in every error.
JsonValue parse_json(std::string_view text, const std::string& source, const JsonLimits& limits = {});

/// `text` as a JSON string literal, quotes included (", \ and control bytes escaped).
std::string json_quote(std::string_view text);

}  // namespace ddp::util
