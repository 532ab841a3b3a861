# Use ccache when it is installed: a translation unit that includes <torch/torch.h> costs ~10-20 s.
find_program(DDP_CCACHE ccache)
if(DDP_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${DDP_CCACHE}")
  message(STATUS "ddp: using ccache (${DDP_CCACHE})")
endif()
