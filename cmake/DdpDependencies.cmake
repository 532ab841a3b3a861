# Third-party dependencies. Everything comes from the system (Debian packages) or a LibTorch prefix
# given through CMAKE_PREFIX_PATH / Torch_DIR; nothing is downloaded.

find_package(Torch REQUIRED)
message(STATUS "ddp: LibTorch ${Torch_VERSION} from ${Torch_DIR}")
find_package(Threads REQUIRED)
# cxxopts (Debian: libcxxopts-dev): the binaries' flags, and the header-only ddp/checkpoint_flags.h.
find_package(cxxopts CONFIG REQUIRED)
# zlib: gzip-compressed dataset files (Debian ships Fashion-MNIST as *.gz). LibTorch needs it anyway.
find_package(ZLIB REQUIRED)

# Gloo: Debian's libgloo-dev installs GlooConfig.cmake under /usr/share/cmake and the library that
# Debian's libtorch links (libgloo.so.0), so one process holds one copy of Gloo.
find_package(Gloo CONFIG QUIET)
if(NOT TARGET gloo)
  find_path(DDP_GLOO_INCLUDE gloo/allreduce_ring.h)
  find_library(DDP_GLOO_LIBRARY NAMES gloo)
  if(NOT DDP_GLOO_INCLUDE OR NOT DDP_GLOO_LIBRARY)
    message(FATAL_ERROR "ddp: Gloo not found (Debian: apt-get install libgloo-dev)")
  endif()
  add_library(gloo SHARED IMPORTED)
  set_target_properties(gloo PROPERTIES IMPORTED_LOCATION "${DDP_GLOO_LIBRARY}"
                                        INTERFACE_INCLUDE_DIRECTORIES "${DDP_GLOO_INCLUDE}")
endif()

# CUDA runtime + NCCL, found directly (not through LibTorch, which may be a CPU build).
set(DDP_HAVE_NCCL OFF)
if(NOT DDP_WITH_NCCL STREQUAL "OFF")
  set(DDP_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root holding cuda_runtime_api.h and nccl.h")
  find_path(DDP_CUDA_INCLUDE cuda_runtime_api.h HINTS "${DDP_CUDA_ROOT}/include" ENV CUDA_HOME PATH_SUFFIXES include)
  find_path(DDP_NCCL_INCLUDE nccl.h HINTS "${DDP_CUDA_ROOT}/include" ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(DDP_CUDART_LIBRARY cudart HINTS "${DDP_CUDA_ROOT}/lib64" "${DDP_CUDA_ROOT}/lib" ENV CUDA_HOME PATH_SUFFIXES lib64 lib)
  find_library(DDP_NCCL_LIBRARY nccl HINTS "${DDP_CUDA_ROOT}/lib64" "${DDP_CUDA_ROOT}/lib" ENV NCCL_HOME PATH_SUFFIXES lib64 lib)
  if(DDP_CUDA_INCLUDE AND DDP_NCCL_INCLUDE AND DDP_CUDART_LIBRARY AND DDP_NCCL_LIBRARY)
    set(DDP_HAVE_NCCL ON)
    message(STATUS "ddp: NCCL backend ON (${DDP_NCCL_LIBRARY}, ${DDP_CUDART_LIBRARY})")
  elseif(DDP_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "ddp: DDP_WITH_NCCL=ON but CUDA runtime/NCCL not found under ${DDP_CUDA_ROOT}")
  else()
    message(STATUS "ddp: NCCL backend OFF (CUDA runtime or NCCL not found)")
  endif()
endif()

# OpenCV: only the RANZCR reader and trainer need it.
set(DDP_HAVE_OPENCV OFF)
if(NOT DDP_WITH_OPENCV STREQUAL "OFF")
  find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs)
  if(OpenCV_FOUND)
    set(DDP_HAVE_OPENCV ON)
  elseif(DDP_WITH_OPENCV STREQUAL "ON")
    message(FATAL_ERROR "ddp: DDP_WITH_OPENCV=ON but OpenCV not found (apt-get install libopencv-dev)")
  endif()
endif()
message(STATUS "ddp: OpenCV ${DDP_HAVE_OPENCV}")

# Python with Debian's torch: the oracle for interop/parity tests and the benchmark baselines.
find_program(DDP_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT DDP_PYTHON)
  find_program(DDP_PYTHON NAMES python3)
endif()
