#pragma once
// Folders, whole-file reads and atomic file writes, written once. Every failure is a DataError naming the path, the
// step that failed and the system's reason (strerror); callers that report another class (ddprun's
// --log-dir is a ConfigError) catch and rethrow.
//
//   make_dirs(dir);
//   write_file_atomically(dir + "/model.pt", {header, payload});
#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::util {

/// True when `path` exists and is a folder (a symlink to one counts).
bool is_directory(const std::string& path);

/// Creates `dir` and its missing parents (mode 0755). An existing folder is fine; a path that exists
/// but is not a folder, or a step that cannot be created, is a DataError.
void make_dirs(const std::string& dir);

/// read_file's "no limit".
inline constexpr size_t kAnySize = SIZE_MAX;

/// The whole of the file at `path`, read in pieces to its end (so /proc files and pipes read whole
/// too), holding at most `max_bytes` (config files, records other programs wrote: an endless or huge
/// file costs at most that much). The one whole-file read of the project. DataError naming the path:
/// "PATH: file not found", "PATH: cannot open (reason)", "PATH: read failed after N bytes (reason)",
/// "PATH: more than N bytes, larger than such a file may be".
std::string read_file(const std::string& path, size_t max_bytes = kAnySize);

/// read_file as bytes, for the decoders that take uint8_t.
std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes = kAnySize);

/// True when `path` exists and is a regular file (a symlink to one counts).
bool is_regular_file(const std::string& path);

/// "dir/name" without doubling the slash; `name` alone when `dir` is empty.
std::string join_path(const std::string& dir, const std::string& name);

/// How hard write_file_atomically works to make the new file survive a power cut.
enum class Durability {
  kSynced,   ///< fsync the file before the rename and the folder after it (checkpoints, outputs)
  kRenamed,  ///< rename only: a crash may lose the file, never leaves half of it (caches)
};

/// Writes the concatenation of `parts` to `path` so that a reader sees either the old file or the
/// whole new one: a temporary file in the same folder (temp_path_for), write, [fsync,] rename over
/// `path`[, fsync of the folder]. On failure the temporary file is removed and a DataError names
/// `path`. The folder must exist.
void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           Durability durability = Durability::kSynced);

/// The temporary name write_file_atomically uses for `path` from this thread:
/// "<folder>/.<name>.tmp-<pid>-<tid>"; dot-prefixed so listings skip it.
std::string temp_path_for(const std::string& path);

/// The pid in a file name made by temp_path_for (".<name>.tmp-<pid>[-<tid>]"), so a folder's owner can
/// remove the temporaries of writers that died; nullopt for any other name.
std::optional<pid_t> temp_file_writer(const std::string& file_name);

}  // namespace ddp::util
