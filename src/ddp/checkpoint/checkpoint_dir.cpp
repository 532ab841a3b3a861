#include "ddp/checkpoint/checkpoint_dir.h"

#include <ddp/checkpoint.h>
#include <ddp/logging.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "util/files.h"
#include "util/numbers.h"

namespace ddp {
namespace detail {
namespace {

constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".ddpckpt";
constexpr size_t kDigits = 12;

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

}  // namespace

std::optional<int64_t> checkpoint_step_from_name(const std::string& name) {
  const size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
  if (name.size() < prefix + 1 + suffix) return std::nullopt;
  if (name.compare(0, prefix, kPrefix) != 0) return std::nullopt;
  if (name.compare(name.size() - suffix, suffix, kSuffix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix, name.size() - prefix - suffix);
  if (digits.size() < kDigits || digits.size() > 18) return std::nullopt;
  const std::optional<long long> step = util::to_int(digits, 0, INT64_MAX);
  // Only the canonical spelling (no sign, no blanks), so every rank maps a step to the same file.
  if (!step || ddp::checkpoint_file_name(*step) != name) return std::nullopt;
  return *step;
}

namespace {

constexpr const char* kStaleSuffix = ".stale";

// Files whose name minus `suffix` is a checkpoint name, oldest (lowest step) first.
std::vector<CheckpointFile> files_named_like_checkpoints(const std::string& dir, const std::string& suffix) {
  std::vector<CheckpointFile> files;
  for (const auto& name : dir_entries(dir)) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    if (auto step = checkpoint_step_from_name(name.substr(0, name.size() - suffix.size())))
      files.push_back({dir + "/" + name, *step});
  }
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.global_step != b.global_step ? a.global_step < b.global_step : a.path < b.path;
  });
  return files;
}

void delete_all_but_newest(const std::vector<CheckpointFile>& files, int keep, const char* what) {
  for (size_t i = 0; i + keep < files.size(); ++i) {
    if (::unlink(files[i].path.c_str()) == 0) {
      DDP_LOG(DEBUG) << what << " " << files[i].path << " deleted (keeping the newest " << keep << ")";
    } else if (errno != ENOENT) {
      DDP_LOG(WARN) << "could not delete " << what << " " << files[i].path << ": " << std::strerror(errno);
    }
  }
}

}  // namespace

std::vector<CheckpointFile> checkpoint_files(const std::string& dir) { return files_named_like_checkpoints(dir, ""); }

std::vector<CheckpointFile> stale_checkpoint_files(const std::string& dir) {
  return files_named_like_checkpoints(dir, kStaleSuffix);
}

void prune_checkpoints(const std::string& dir, int keep) {
  if (keep <= 0) return;
  delete_all_but_newest(checkpoint_files(dir), keep, "old checkpoint");
  // Retired files are kept for a post-mortem of the replaced run, under the same bound: without
  // one, every restart with --resume none (or past a corrupt file) would add files forever.
  delete_all_but_newest(stale_checkpoint_files(dir), keep, "retired checkpoint");
}

void retire_checkpoints_after(const std::string& dir, int64_t global_step) {
  for (const auto& f : checkpoint_files(dir)) {
    if (f.global_step <= global_step) continue;
    std::string stale = f.path + kStaleSuffix;
    if (::rename(f.path.c_str(), stale.c_str()) == 0) {
      DDP_LOG(WARN) << "checkpoint " << f.path << " is newer (global step " << f.global_step
                    << ") than this run (step " << global_step << "): it belongs to a replaced run, renamed to "
                    << stale;
    } else {
      DDP_LOG(WARN) << "could not rename replaced checkpoint " << f.path << ": " << std::strerror(errno);
    }
  }
}

void remove_stale_temporaries(const std::string& dir) {
  for (const auto& name : dir_entries(dir)) {
    if (name.rfind(std::string(".") + kPrefix, 0) != 0) continue;
    const std::optional<pid_t> pid = util::temp_file_writer(name);
    if (!pid || *pid == ::getpid()) continue;
    if (::kill(*pid, 0) == 0 || errno == EPERM) continue;  // its writer may still run
    std::string path = dir + "/" + name;
    if (::unlink(path.c_str()) == 0) {
      DDP_LOG(INFO) << "removed " << path << ", left behind by an interrupted checkpoint write";
    }
  }
}

}  // namespace detail

std::string checkpoint_file_name(int64_t global_step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%0*lld%s", detail::kPrefix, static_cast<int>(detail::kDigits),
                static_cast<long long>(global_step), detail::kSuffix);
  return buf;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& f : detail::checkpoint_files(dir)) out.push_back(f.path);
  return out;
}

}  // namespace ddp
