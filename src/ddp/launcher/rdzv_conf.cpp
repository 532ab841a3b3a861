#include "ddp/launcher/rdzv_conf.h"

#include <ddp/errors.h>

#include <cmath>
#include <map>
#include <sstream>

#include "util/env.h"
#include "util/numbers.h"

namespace ddp::launcher {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::chrono::milliseconds seconds(const std::string& source, const std::string& key, const std::string& value) {
  const std::optional<double> v = util::to_real(value);
  if (!v || *v <= 0 || *v > 7 * 24 * 3600.0)
    throw ConfigError(source + ": " + key + "='" + util::printable(value) +
                      "' is not a number of seconds above 0 and at most a week");
  return std::chrono::milliseconds(static_cast<long long>(std::llround(*v * 1000.0)));
}

const std::map<std::string, const char*>& no_effect_keys() {
  static const std::map<std::string, const char*> keys = {
      {"close_timeout", "torch's agents' shutdown of a round; ddprun's nodes watch the store"},
      {"heartbeat_timeout", "torch 1.13's heartbeat; ddprun's are keep_alive_interval x keep_alive_max_attempt"},
      {"use_libuv", "ddprun's store is its own server"},
  };
  return keys;
}

}  // namespace

RdzvConf parse_rdzv_conf(const std::string& source, const std::string& text) {
  RdzvConf conf;
  if (trim(text).empty()) return conf;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    const std::string key = trim(item.substr(0, eq));
    const std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
    if (key.empty() || value.empty())
      throw ConfigError(source + "='" + util::printable(text) + "' is not a list of key=value (at '" +
                        util::printable(item) + "')");
    if (key == "join_timeout" || key == "timeout") {
      conf.join_timeout = seconds(source, key, value);
    } else if (key == "read_timeout") {
      conf.store_timeout = seconds(source, key, value);
    } else if (key == "last_call_timeout") {
      conf.last_call = seconds(source, key, value);
    } else if (key == "is_host") {
      conf.is_host = util::parse_bool(source + ": is_host", value);
    } else if (key == "keep_alive_interval") {
      conf.keep_alive_interval = seconds(source, key, value);
    } else if (key == "keep_alive_max_attempt") {
      conf.keep_alive_max_attempt = static_cast<int>(util::parse_int(source + ": keep_alive_max_attempt", value, 1, 1000));
    } else if (auto it = no_effect_keys().find(key); it != no_effect_keys().end()) {
      conf.no_effect.push_back(source + ": " + key + "=" + value + " has no effect: " + it->second);
    } else {
      throw ConfigError(source + ": '" + util::printable(key) +
                        "' is not a c10d rendezvous setting ddprun knows (join_timeout, timeout, read_timeout, "
                        "last_call_timeout, close_timeout, heartbeat_timeout, keep_alive_interval, "
                        "keep_alive_max_attempt, is_host, use_libuv)");
    }
  }
  if (text.back() == ',')
    throw ConfigError(source + "='" + util::printable(text) + "' is not a list of key=value (it ends with a comma)");
  return conf;
}

}  // namespace ddp::launcher
