#include "ddp/launcher/launch_config.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "ddp/launcher/rdzv_conf.h"
#include "util/env.h"
#include "util/help_epilogue.h"
#include "util/nproc.h"
#include "util/numbers.h"
#include "util/program_path.h"

namespace ddp::launcher {
namespace {

using util::EnvMap;

enum class Kind { kValue, kBool, kIgnored };

struct FlagSpec {
  const char* name;  // canonical, dashes
  Kind kind;
  // What the value is, as --help, the man page and the bash completion show it (util/cli.h lists
  // the names); empty for a switch.
  const char* value_name;
  const char* help;
};

// torchrun's flags we take (underscore spellings are accepted too), plus ours marked (ddprun).
const std::vector<FlagSpec>& flag_specs() {
  static const std::vector<FlagSpec> specs = {
      {"nproc-per-node", Kind::kValue, "{N|auto|gpu|cpu}", "workers on this node: N, auto (GPUs, else CPUs), gpu or cpu [1]"},
      {"nnodes", Kind::kValue, "N[:N]", "number of nodes: N, or MIN:MAX (elastic, with --rdzv-backend c10d) [1]"},
      {"node-rank", Kind::kValue, "N", "this node's index (static rendezvous) [PET_NODE_RANK, JOB_COMPLETION_INDEX, RANK, 0]"},
      {"master-addr", Kind::kValue, "HOST", "the store's host: node 0 (static) or the c10d endpoint [MASTER_ADDR, 127.0.0.1]"},
      {"master-port", Kind::kValue, "PORT", "the store's port [MASTER_PORT, 29500]"},
      {"standalone", Kind::kBool, "", "one node, store on a free local port"},
      {"max-restarts", Kind::kValue, "N", "restarts of the worker group after a failure (see --restart-on) [0]"},
      {"restart-on", Kind::kValue, "{any|retryable}", "(ddprun) failures that restart: any (torchrun's), or retryable (exit >= 128) only, a permanent one (1-127) ending the job at once [any]"},
      {"monitor-interval", Kind::kValue, "SECONDS", "seconds between checks of workers and other nodes [0.1]"},
      {"grace-period", Kind::kValue, "SECONDS", "(ddprun) seconds between SIGTERM and SIGKILL when stopping workers [30]"},
      {"join-timeout", Kind::kValue, "SECONDS", "(ddprun) seconds to wait for node 0's store and the other nodes [900]"},
      {"store-timeout", Kind::kValue, "SECONDS", "(ddprun) seconds one store request may take once joined; then exit 201 [30]"},
      {"run-id", Kind::kValue, "NAME", "job id: TORCHELASTIC_RUN_ID and the --log-dir subfolder [made up by node 0]"},
      {"role", Kind::kValue, "NAME", "worker role name (ROLE_NAME) [default]"},
      {"log-dir", Kind::kValue, "DIR", "write <log-dir>/<run-id>/attempt_<n>/<rank>/{stdout,stderr}.log [a new $TMPDIR/torchelastic_* with --tee or --redirects]"},
      {"tee", Kind::kValue, "{0|1|2|3|LIST}", "accepted as torchrun's (0-3 or 'local_rank:v,...'): every stream is written to the log folder and the console"},
      {"redirects", Kind::kValue, "{0|1|2|3|LIST}", "streams kept off the console (files only): 0 none 1 out 2 err 3 both, or 'lr:v,...'"},
      {"local-ranks-filter", Kind::kValue, "LIST", "only these local ranks (e.g. 0,1) print to the console; files are unaffected [all]"},
      {"module", Kind::kBool, "", "run PROGRAM as a Python module: python3 -u -m PROGRAM (torchrun's -m)"},
      {"no-python", Kind::kBool, "", "run PROGRAM itself even when it ends in .py (without it a .py script runs as python3 -u SCRIPT, as torchrun)"},
      {"start-method", Kind::kIgnored, "{spawn|fork|forkserver}", "accepted for torchrun compatibility (spawn, fork, forkserver)"},
      {"rdzv-backend", Kind::kValue, "{static|c10d}", "static: node ranks from --node-rank; c10d: handed out in join order, each round anew (elastic with --nnodes MIN:MAX) [static]"},
      {"rdzv-endpoint", Kind::kValue, "HOST:PORT", "the store's host:port, taken as --master-addr/--master-port when those are unset"},
      {"rdzv-id", Kind::kValue, "NAME", "taken as --run-id when that is unset"},
      {"rdzv-conf", Kind::kValue, "LIST", "key=value,...: join_timeout (or timeout), read_timeout, last_call_timeout, is_host, keep_alive_interval, keep_alive_max_attempt"},
  };
  return specs;
}

// torchrun's one-letter spellings: "-r" for --redirects, "-t" for --tee; nullptr for the others.
const char* short_spelling(const std::string& name) {
  if (name == "redirects") return "-r";
  if (name == "tee") return "-t";
  if (name == "module") return "-m";
  return nullptr;
}

// torchrun 2.6 flags ddprun does not take, each with the reason its error gives (exit 2), so none
// is silently dropped or reported as a typo.
const char* refused_torchrun_flag(const std::string& name) {
  static const std::map<std::string, const char*> refused = {
      {"run-path", "it runs the script inside torchrun's own Python process (runpy.run_path); ddprun starts every "
                   "worker as a process of its own (a .py script as python3 -u SCRIPT)"},
      {"local-addr", "it is the address a node advertises in torch's c10d rendezvous; ddprun's nodes and workers "
                     "meet at the store (--rdzv-endpoint) and advertise nothing"},
      {"logs-specs", "it names a Python LogsSpecs class to load; ddprun's log layout is fixed (--log-dir, --tee, "
                     "--redirects, --local-ranks-filter)"},
  };
  auto it = refused.find(name);
  return it == refused.end() ? nullptr : it->second;
}

const FlagSpec* find_flag(const std::string& name) {
  for (const auto& f : flag_specs())
    if (name == f.name) return &f;
  return nullptr;
}

std::string env_name_of(const std::string& flag) {
  std::string out = "PET_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A value and where it came from ("--nnodes", "PET_NNODES"), for error messages.
struct Raw {
  std::string value;
  std::string source;
};

class Sources {
 public:
  Sources(std::map<std::string, std::string> cli, const EnvMap& env) : cli_(std::move(cli)), env_(env) {}
  /// Command line first, then PET_<FLAG>.
  std::optional<Raw> get(const std::string& flag) const {
    auto it = cli_.find(flag);
    if (it != cli_.end()) return Raw{it->second, "--" + flag};
    if (auto v = util::env_get(env_, env_name_of(flag))) return Raw{*v, env_name_of(flag)};
    return std::nullopt;
  }
  std::optional<Raw> env(const std::string& name) const {
    if (auto v = util::env_get(env_, name)) return Raw{*v, name};
    return std::nullopt;
  }
  const EnvMap& env_map() const { return env_; }

 private:
  std::map<std::string, std::string> cli_;
  const EnvMap& env_;
};

int parse_int(const Raw& r, long long lo, long long hi) { return static_cast<int>(util::parse_int(r.source, r.value, lo, hi)); }

// --local-ranks-filter "0,1,2": local ranks, as torchrun's (a rank may repeat).
std::set<int> parse_local_ranks(const Raw& r) {
  std::set<int> ranks;
  std::string item;
  std::istringstream in(r.value);
  try {
    while (std::getline(in, item, ',')) ranks.insert(static_cast<int>(util::parse_int(r.source, item, 0, util::kMaxRanks)));
  } catch (const ConfigError&) {
    ranks.clear();
  }
  if (ranks.empty() || r.value.empty() || r.value.back() == ',')
    throw ConfigError(r.source + "='" + util::printable(r.value) + "' is not a comma-separated list of local ranks (e.g. 0,1,2)");
  return ranks;
}

std::chrono::milliseconds parse_seconds(const Raw& r, double lo, bool lo_inclusive) {
  const std::optional<double> seconds = util::to_real(r.value);
  if (!seconds) throw ConfigError(r.source + "='" + util::printable(r.value) + "' is not a number of seconds");
  const double v = *seconds;
  if (v < lo || (!lo_inclusive && v == lo) || v > 7 * 24 * 3600.0)
    throw ConfigError(r.source + "='" + util::printable(r.value) + "' is out of range: expected " + (lo_inclusive ? ">= " : "> ") +
                      std::to_string(static_cast<int>(lo)) + " seconds, at most a week");
  return std::chrono::milliseconds(static_cast<long long>(std::llround(v * 1000.0)));
}

void check_name(const Raw& r) {
  if (r.value.empty() || r.value.size() > 128)
    throw ConfigError(r.source + "='" + util::printable(r.value) + "' must be 1 to 128 characters");
  for (char c : r.value)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      throw ConfigError(r.source + "='" + util::printable(r.value) + "' may only hold letters, digits, '-', '_' and '.'");
}

}  // namespace

// ---- StreamSpec -----------------------------------------------------------------------------------
StreamSpec StreamSpec::parse(const std::string& flag, const std::string& text) {
  auto bad = [&](const std::string& why) {
    return ConfigError(flag + "='" + util::printable(text) + "' " + why + " (expected 0-3, or 'local_rank:0-3,...')");
  };
  auto digit = [&](const std::string& s) {
    if (s.size() != 1 || s[0] < '0' || s[0] > '3') throw bad("has a bad value '" + util::printable(s) + "'");
    return s[0] - '0';
  };
  StreamSpec spec;
  if (text.find(':') == std::string::npos) {
    spec.default_ = digit(text);
    return spec;
  }
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos) throw bad("mixes a bare value with 'local_rank:value' items");
    int rank = static_cast<int>(util::parse_int(flag, item.substr(0, colon), 0, util::kMaxRanks));
    if (spec.per_rank_.count(rank)) throw bad("names local rank " + std::to_string(rank) + " twice");
    spec.per_rank_[rank] = digit(item.substr(colon + 1));
  }
  return spec;
}

int StreamSpec::value(int local_rank) const {
  auto it = per_rank_.find(local_rank);
  return it == per_rank_.end() ? default_ : it->second;
}

bool StreamSpec::any() const {
  if (default_) return true;
  for (auto& [r, v] : per_rank_)
    if (v) return true;
  return false;
}

// torchrun runs its script with Python (`python -u SCRIPT`, `python -u -m MODULE` with -m) unless
// --no-python. ddprun runs other programs itself, so only a .py script or -m goes through python3
// (from PATH); the interpreter's absence or a missing script is a ConfigError naming it.
void run_python_like_torchrun(LaunchConfig& c, const EnvMap& env) {
  const std::string& first = c.program[0];
  const bool script = first.size() > 3 && first.compare(first.size() - 3, 3, ".py") == 0;
  if (!c.module && (c.no_python || !script)) {
    c.program[0] = util::resolve_program(first, env);
    return;
  }
  if (!c.module && ::access(first.c_str(), R_OK) != 0)
    throw ConfigError("script '" + util::printable(first) + "' cannot be read (ddprun runs it as python3 -u " +
                      util::printable(first) + ")");
  std::string python;
  try {
    python = util::resolve_program("python3", env);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + ": ddprun runs " + (c.module ? "-m modules" : ".py scripts") +
                      " with python3 -u, as torchrun runs them with Python" + (c.module ? "" : " (--no-python runs the script itself)"));
  }
  std::vector<std::string> head = {python, "-u"};
  if (c.module) head.push_back("-m");
  c.program.insert(c.program.begin(), head.begin(), head.end());
}

// ---- parsing --------------------------------------------------------------------------------------
// Not util::parse_command_line (cxxopts): ddprun stops at the first positional word, and everything
// from there on belongs to the program it runs, flags included (torchrun's contract).
namespace {

// Splits argv into ddprun's flags (canonical names, dashes) and the program with its arguments;
// -h/--help and --version set `c` and stop there.
std::map<std::string, std::string> split_command_line(const std::vector<std::string>& argv, LaunchConfig& c) {
  std::map<std::string, std::string> cli;
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program
    if (arg == "-h" || arg == "--help") {
      c.help = true;
      return cli;
    }
    if (arg == "--version") {
      c.version = true;
      return cli;
    }
    std::string name, value;
    bool has_value = false;
    if (arg == short_spelling("redirects") || arg == short_spelling("tee") || arg == short_spelling("module")) {
      name = arg == short_spelling("redirects") ? "redirects" : arg == short_spelling("tee") ? "tee" : "module";
    } else if (arg.compare(0, 2, "--") == 0) {
      name = arg.substr(2);
      auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      for (auto& ch : name)
        if (ch == '_') ch = '-';
    } else {
      throw ConfigError("unknown option '" + util::printable(arg) + "' (ddprun --help lists them)");
    }
    if (const char* why = refused_torchrun_flag(name))
      throw ConfigError("--" + name + " is torchrun's, and ddprun does not take it: " + why);
    const FlagSpec* spec = find_flag(name);
    if (!spec) throw ConfigError("unknown option '--" + util::printable(name) + "' (ddprun --help lists them)");
    if (spec->kind == Kind::kBool) {
      if (has_value) util::parse_bool("--" + name, value);  // validates
      cli[name] = has_value ? value : "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argv.size()) throw ConfigError("--" + name + " needs a value");
      value = argv[++i];
    }
    cli[name] = value;
  }
  for (; i < argv.size(); ++i) c.program.push_back(argv[i]);
  return cli;
}

// The switches, and the start method torchrun takes (validated, no effect here).
void read_switches(const Sources& s, LaunchConfig& c) {
  auto flag_bool = [&](const std::string& flag) {
    auto r = s.get(flag);
    return r ? util::parse_bool(r->source, r->value) : false;
  };

  c.standalone = flag_bool("standalone");
  c.no_python = flag_bool("no-python");
  c.module = flag_bool("module");
  if (c.module && c.no_python)
    throw ConfigError("-m/--module runs a Python module and --no-python runs the program itself: give one of them");
  if (auto r = s.get("start-method"))
    if (r->value != "spawn" && r->value != "fork" && r->value != "forkserver")
      throw ConfigError(r->source + "='" + util::printable(r->value) + "' is not spawn, fork or forkserver");
}

// The rendezvous, the node count and this node's rank (static) or the c10d rendezvous's range.
void read_nodes(const Sources& s, LaunchConfig& c) {
  std::optional<Raw> backend = s.get("rdzv-backend");
  if (backend && backend->value != "static" && backend->value != "c10d")
    throw ConfigError(backend->source + "='" + util::printable(backend->value) +
                      "' is not supported: ddprun takes static or c10d (etcd needs an etcd server ddprun does not speak to)");
  const bool c10d = backend && backend->value == "c10d";

  // Nodes. PyTorchJob v1 before PET_* existed: WORLD_SIZE counts pods and RANK is the pod index.
  const bool pytorchjob_v1 = !s.env("LOCAL_RANK") && s.env("RANK");
  std::optional<Raw> nnodes = s.get("nnodes");
  if (nnodes) {
    util::NodeRange range = util::parse_node_range(nnodes->source, nnodes->value);
    c.min_nodes = range.min;
    c.nnodes = range.max;
  } else if (pytorchjob_v1 && s.env("WORLD_SIZE")) {
    c.nnodes = c.min_nodes = parse_int(*s.env("WORLD_SIZE"), 1, util::kMaxRanks);
  }
  if (c.min_nodes < c.nnodes && !c10d)
    throw ConfigError(nnodes->source + "=" + nnodes->value + " is an elastic range, which needs --rdzv-backend c10d "
                      "(the static rendezvous runs a fixed node count)");
  std::optional<Raw> node_rank = s.get("node-rank");
  if (!node_rank) node_rank = s.env("JOB_COMPLETION_INDEX");
  if (!node_rank && pytorchjob_v1) node_rank = s.env("RANK");
  // torchrun's c10d rendezvous always hands out node ranks; ddprun keeps a given one when the node
  // count is fixed (a static table over the same store), and only then.
  c.dynamic_rendezvous = c10d && c.nnodes > 1 && (!node_rank || c.min_nodes < c.nnodes);
  if (c.dynamic_rendezvous && node_rank) {
    parse_int(*node_rank, 0, util::kMaxRanks);  // still checked: garbage is a mistake to report
    c.notes.push_back(node_rank->source + "=" + node_rank->value + " has no effect: with an elastic node count " +
                      "the c10d rendezvous hands out node ranks in join order, as torchrun's does");
  }
  if (c.dynamic_rendezvous) {
    c.node_rank_source = "the c10d rendezvous";
  } else if (node_rank) {
    c.node_rank = parse_int(*node_rank, 0, util::kMaxRanks);
    c.node_rank_source = node_rank->source;
    if (c.node_rank >= c.nnodes)
      throw ConfigError(node_rank->source + "=" + node_rank->value + " is not below the node count " +
                        std::to_string(c.nnodes));
  } else if (c.nnodes > 1) {
    throw ConfigError("--nnodes=" + std::to_string(c.nnodes) +
                      " but no node rank: pass --node-rank or set PET_NODE_RANK / JOB_COMPLETION_INDEX, or let "
                      "--rdzv-backend c10d hand them out");
  }
  if (c.standalone && c.nnodes != 1)
    throw ConfigError("--standalone runs one node, but the node count is " + std::to_string(c.nnodes));
}

// Where the store is: flags / PET_*, then --rdzv-endpoint, then MASTER_ADDR / MASTER_PORT.
void read_store_address(const Sources& s, LaunchConfig& c) {
  // Store address: flags / PET_*, then --rdzv-endpoint, then MASTER_ADDR / MASTER_PORT. Every value
  // that is set is checked, also where another one wins (--standalone, a flag over a variable): a
  // garbage value is a mistake to report, not one to step over.
  std::optional<Raw> addr = s.get("master-addr"), port = s.get("master-port");
  if (auto ep = s.get("rdzv-endpoint")) {
    util::HostPort hp = util::split_host_port(ep->source, ep->value);
    if (hp.port) util::parse_port(ep->source + " port", *hp.port, /*allow_zero=*/true);
    if (!addr) addr = Raw{hp.host, ep->source};
    if (!port && hp.port) port = Raw{*hp.port, ep->source + " port"};
  }
  if (auto r = s.env("MASTER_ADDR")) {
    util::parse_host(r->source, r->value);
    if (!addr) addr = r;
  }
  if (auto r = s.env("MASTER_PORT")) {
    util::parse_port(r->source, r->value, /*allow_zero=*/true);
    if (!port) port = r;
  }
  std::string host = addr ? util::parse_host(addr->source, addr->value) : c.master_addr;
  int port_number = port ? util::parse_port(port->source, port->value, /*allow_zero=*/c.nnodes == 1) : c.master_port;
  if (c.standalone) {
    c.master_addr = "127.0.0.1";
    c.master_port = 0;
  } else {
    if (!addr && c.nnodes > 1)
      throw ConfigError("--nnodes=" + (c.min_nodes < c.nnodes ? std::to_string(c.min_nodes) + ":" : std::string()) +
                        std::to_string(c.nnodes) + " needs --master-addr (or PET_MASTER_ADDR / MASTER_ADDR, --rdzv-endpoint)");
    c.master_addr = host;
    c.master_port = port_number;
  }
}

// The workers: how many, how often restarted, how watched and stopped.
void read_workers(const Sources& s, const EnvMap& env, LaunchConfig& c) {
  // Workers.
  if (auto r = s.get("nproc-per-node")) {
    if (r->value == "auto" || r->value == "cpu" || r->value == "gpu") {
      util::Count n = util::auto_nproc(r->value, r->source, env);
      c.nproc_per_node = n.n;
      c.nproc_reason = r->source + "=" + r->value + ": " + n.how;
    } else {
      c.nproc_per_node = parse_int(*r, 1, 4096);
      c.nproc_reason = r->source;
    }
  } else {
    c.nproc_reason = "default";
  }
  if (auto r = s.get("max-restarts")) c.max_restarts = parse_int(*r, 0, 1000000);
  if (auto r = s.get("restart-on")) {
    if (r->value != "any" && r->value != "retryable")
      throw ConfigError(r->source + "='" + util::printable(r->value) + "' is not any or retryable");
    c.restart_on_any_failure = r->value == "any";
  }
  if (auto r = s.get("monitor-interval")) c.monitor_interval = parse_seconds(*r, 0, false);
  if (auto r = s.get("grace-period")) c.grace_period = parse_seconds(*r, 0, true);
  if (auto r = s.get("join-timeout")) c.join_timeout = parse_seconds(*r, 0, false);
  if (auto r = s.get("store-timeout")) c.store_timeout = parse_seconds(*r, 0, false);
}

// --rdzv-conf: each key either taken (unless its own flag is given) or noted as having no effect.
void read_rdzv_conf(const Sources& s, LaunchConfig& c) {
  if (auto r = s.get("rdzv-conf")) {
    RdzvConf conf = parse_rdzv_conf(r->source, r->value);
    auto take = [&](const std::optional<std::chrono::milliseconds>& value, const char* flag, const char* key,
                    std::chrono::milliseconds& into) {
      if (!value) return;
      if (s.get(flag)) c.notes.push_back("--" + std::string(flag) + " wins over " + r->source + " " + key);
      else into = *value;
    };
    take(conf.join_timeout, "join-timeout", "join_timeout", c.join_timeout);
    take(conf.store_timeout, "store-timeout", "read_timeout", c.store_timeout);
    if (conf.last_call) {
      if (c.dynamic_rendezvous) c.last_call = *conf.last_call;
      else c.notes.push_back(r->source + ": last_call_timeout has no effect: the static rendezvous waits for all " + std::to_string(c.nnodes) + " node(s)");
    }
    if (conf.is_host) {
      if (c.dynamic_rendezvous) c.is_host = conf.is_host;
      else c.notes.push_back(r->source + ": is_host has no effect: the static rendezvous's store is in node 0's ddprun");
    }
    if (conf.keep_alive_interval || conf.keep_alive_max_attempt) {
      if (c.dynamic_rendezvous) {
        if (conf.keep_alive_interval) c.keep_alive_interval = *conf.keep_alive_interval;
        if (conf.keep_alive_max_attempt) c.keep_alive_max_attempt = *conf.keep_alive_max_attempt;
      } else {
        c.notes.push_back(r->source + ": keep_alive_* have no effect: the static rendezvous's nodes send no heartbeats");
      }
    }
    c.notes.insert(c.notes.end(), conf.no_effect.begin(), conf.no_effect.end());
  }
}

// The job's names and where the workers' output goes.
void read_names_and_output(const Sources& s, LaunchConfig& c) {
  if (auto r = s.get("run-id")) {
    check_name(*r);
    c.run_id = r->value;
  } else if (auto id = s.get("rdzv-id")) {
    check_name(*id);
    c.run_id = id->value;
  }
  if (auto r = s.get("role")) {
    check_name(*r);
    c.role = r->value;
  }
  if (auto r = s.get("log-dir")) c.log_dir = r->value;
  if (auto r = s.get("tee")) c.tee = StreamSpec::parse(r->source, r->value);
  if (auto r = s.get("redirects")) c.redirects = StreamSpec::parse(r->source, r->value);
  if (auto r = s.get("local-ranks-filter")) c.local_ranks_filter = parse_local_ranks(*r);
}

}  // namespace

LaunchConfig parse_launch_args(const std::vector<std::string>& argv, const EnvMap& env) {
  LaunchConfig c;
  std::map<std::string, std::string> cli = split_command_line(argv, c);
  if (c.help || c.version) return c;
  const Sources s(std::move(cli), env);
  read_switches(s, c);
  read_nodes(s, c);
  read_store_address(s, c);
  read_workers(s, env, c);
  read_rdzv_conf(s, c);
  read_names_and_output(s, c);
  if (c.program.empty()) throw ConfigError("no program to run: ddprun [options] [--] program [args...]");
  run_python_like_torchrun(c, env);
  return c;
}

std::string LaunchConfig::describe() const {
  std::ostringstream s;
  s << nproc_per_node << " worker(s) on ";
  if (dynamic_rendezvous)
    s << "one of " << (min_nodes < nnodes ? std::to_string(min_nodes) + ":" : std::string()) << nnodes
      << " nodes (node rank from the c10d rendezvous, last call " << last_call.count() / 1000.0 << " s)";
  else
    s << "node " << node_rank << "/" << nnodes << " (node rank from " << node_rank_source << ")";
  s << " (nproc from " << nproc_reason << "), store " << master_addr << ":"
    << (master_port ? std::to_string(master_port) : std::string("<free port>")) << ", max restarts "
    << max_restarts << " (on " << (restart_on_any_failure ? "any failure" : "retryable failures") << "), program "
    << program[0];
  return s.str();
}

std::string launch_usage() {
  // Options as cxxopts lays out the other binaries' (a value name after the flag, descriptions in
  // one column, a flag too long for it on a line of its own), so help2man and the completion read
  // every binary's --help alike.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& f : flag_specs()) {
    const char* short_name = short_spelling(f.name);
    rows.emplace_back((short_name ? std::string("  ") + short_name + ", --" : std::string("      --")) + f.name +
                          (f.kind == Kind::kBool ? "" : std::string(" ") + f.value_name),
                      f.help);
  }
  rows.emplace_back("      --version", "print ddprun's version and exit");
  rows.emplace_back("  -h, --help", "this text");
  constexpr size_t kWidest = 30;
  size_t column = 0;
  for (const auto& [left, help] : rows) column = std::max(column, std::min(left.size(), kWidest));
  column += 2;
  std::ostringstream s;
  s << "Usage: ddprun [OPTION...] [--] PROGRAM [ARG...]\n\n"
       "Starts --nproc-per-node copies of PROGRAM with torchrun's environment (RANK, LOCAL_RANK,\n"
       "WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*), prefixes their output with the rank,\n"
       "restarts them together after a failure (any, as torchrun; --restart-on retryable: exit >= 128\n"
       "only) and returns the failing worker's exit code. Every option can also come from\n"
       "PET_<OPTION> (e.g. PET_NNODES).\n\n"
       "Options:\n";
  for (const auto& [left, help] : rows) {
    s << left;
    if (left.size() + 2 > column) s << "\n" << std::string(column, ' ');
    else s << std::string(column - left.size(), ' ');
    s << help << "\n";
  }
  s << "\n" << util::help_epilogue(util::HelpFor::kLauncher);
  return s.str();
}

}  // namespace ddp::launcher
