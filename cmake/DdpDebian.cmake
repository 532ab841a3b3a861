# Debian packages from this build (`cpack -G DEB` in the build folder; scripts/make-debs.sh):
#   libddp<SOVERSION>  the shared library               (component runtime)
#   libddp-dev         headers, the CMake package, .so (component dev)
#   ddp-tools          ddprun, the trainers, the data tools, ddp-plot, man pages, completion (tools)
#
# Why CPack and not a debian/ folder with dpkg-buildpackage: the packages come from the build the
# test command has already made (one compile per LibTorch version), where dpkg-buildpackage would
# compile everything again from a clean tree (~17 more CPU minutes on the test machine). CPack still
# runs dpkg-shlibdeps for the Depends, writes a shlibs file and an ldconfig trigger for the library,
# and strips the binaries, as debhelper would; it makes no -dbgsym package.
#
# Files go under /usr with CMAKE_INSTALL_LIBDIR as configured: `lib` for a build configured for
# /usr/local (GNUInstallDirs picks the multiarch folder only when the configured prefix is /usr),
# so the library lands in /usr/lib, which the dynamic linker searches; the binaries' RUNPATH
# $ORIGIN/../lib then names that same folder.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ddp)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "ddp developers <ddp-dev@lists.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed data-parallel training for LibTorch")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)              # name_version-release_arch.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)              # xz took 4x longer for 3% less
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)               # Depends from the ELF files' NEEDED entries
# libddp's own SONAME is not installed yet when the tools' Depends are computed: let dpkg-shlibdeps
# find it in the staging folders; the tools' dependency on the exact library package comes from the
# component dependency below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}/src")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)         # shlibs file + ldconfig trigger in libddp
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)        # Depends: libddpX (= version)

set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libddp${DDP_SOVERSION}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "distributed data-parallel training for LibTorch - shared library\nA c10d-compatible TCP store, Gloo (CPU) and NCCL (CUDA) process groups, a\nDistributedDataParallel wrapper with gradient bucketing and a DistributedSampler\nthat yields PyTorch's indices, for C++ trainers built on LibTorch.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libddp-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The public headers use LibTorch and cxxopts types; find_package(ddp) finds Torch and cxxopts.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libtorch-dev, libcxxopts-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "distributed data-parallel training for LibTorch - development files\nHeaders and the CMake package: find_package(ddp) and target_link_libraries(x ddp::ddp).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ddp-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
# OpenBLAS's OpenMP variant is LibTorch's BLAS here and the postinst pins it (scripts/select-blas.sh);
# python3-matplotlib draws ddp-plot's curves.
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libopenblas0-openmp, python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/packaging/ddp-tools/postinst;${PROJECT_SOURCE_DIR}/packaging/ddp-tools/prerm")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "distributed data-parallel training for LibTorch - launcher and trainers\nddprun (a torchrun-like launcher without Python), the CIFAR-10 and RANZCR CLiP\ntrainers, the data tools and ddp-plot, with man pages and bash completion.")

# Each package carries the license as Debian expects it (/usr/share/doc/<package>/copyright), and
# the tools the BLAS pin their maintainer scripts run.
foreach(component runtime dev tools)
  string(TOUPPER "${component}" upper)
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" RENAME copyright
          DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME}" COMPONENT ${component})
endforeach()
install(PROGRAMS "${PROJECT_SOURCE_DIR}/scripts/select-blas.sh" RENAME select-blas
        DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/ddp" COMPONENT tools)

# A package that needs a library no Debian package provides (NCCL from /usr/local/cuda) is refused
# before it is made, naming the library.
set(CPACK_DDP_SOURCE_DIR "${PROJECT_SOURCE_DIR}")
set(CPACK_PRE_BUILD_SCRIPTS "${PROJECT_SOURCE_DIR}/cmake/DdpDebianCheck.cmake")

include(CPack)
