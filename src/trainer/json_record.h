#pragma once
// One JSON object for the metrics file, built field by field in the order written: compact (no
// spaces), numbers as json_number() (%.6g; NaN and infinities null), absent optionals null.
//
//   JsonRecord r;
//   r.string("type", "eval").integer("step", 120).number("loss", 0.51);
//   metrics.append(r.str());   // {"type":"eval","step":120,"loss":0.51}

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::trainer {

class JsonRecord {
 public:
  JsonRecord& integer(const std::string& key, int64_t value);
  JsonRecord& number(const std::string& key, double value);
  JsonRecord& number(const std::string& key, const std::optional<double>& value);
  JsonRecord& numbers(const std::string& key, const std::vector<double>& values);
  JsonRecord& numbers(const std::string& key, const std::vector<std::optional<double>>& values);
  JsonRecord& string(const std::string& key, const std::string& value);
  JsonRecord& strings(const std::string& key, const std::vector<std::string>& values);
  /// `other`'s fields after this one's.
  JsonRecord& append(const JsonRecord& other);

  bool empty() const { return body_.empty(); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  JsonRecord& field(const std::string& key, const std::string& json_value);
  std::string body_;
};

}  // namespace ddp::trainer
