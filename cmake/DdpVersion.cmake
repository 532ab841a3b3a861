# ddp/version.h: the project version and whether NCCL is built in, generated into the build tree (so
# the source tree holds no copy that could go stale) and installed beside the other public headers.
# Included after DdpDependencies, which decides DDP_HAVE_NCCL.
include(GNUInstallDirs)

# DDP_WITH_NCCL is the AUTO/ON/OFF cache option; the header's macro says what was decided.
if(DDP_HAVE_NCCL)
  set(DDP_VERSION_WITH_NCCL 1)
else()
  set(DDP_VERSION_WITH_NCCL 0)
endif()

# src/CMakeLists.txt adds this folder to the ddp target's public build-tree include path.
set(DDP_GENERATED_INCLUDE_DIR "${PROJECT_BINARY_DIR}/include")
configure_file("${CMAKE_CURRENT_LIST_DIR}/version.h.in" "${DDP_GENERATED_INCLUDE_DIR}/ddp/version.h" @ONLY)
install(FILES "${DDP_GENERATED_INCLUDE_DIR}/ddp/version.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ddp COMPONENT dev)

# libddp's SONAME follows ABI breaks. Before 1.0 every minor release may break the ABI (0.1 -> 0.2
# did), so the SOVERSION is MAJOR.MINOR (libddp.so.0.2, Debian package libddp0.2) and patch
# releases keep it; from 1.0 on it is MAJOR. tests/package/check_abi.py fails when an exported
# symbol of tests/package/libddp.symbols disappears while the SOVERSION stays.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(DDP_SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
else()
  set(DDP_SOVERSION "${PROJECT_VERSION_MAJOR}")
endif()
