#pragma once
// The programs the launcher tests start, in this build tree (tests/launcher/CMakeLists.txt defines
// DDP_BUILD_DIR). One definition for the whole folder: its tests share compilation units in a unity
// build.
#include <string>

inline const std::string kDdprun = std::string(DDP_BUILD_DIR) + "/apps/ddprun/ddprun";
inline const std::string kTrainer = std::string(DDP_BUILD_DIR) + "/tests/launcher/ddp_test_trainer";
