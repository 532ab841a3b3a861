# DDP_SANITIZE: build ddp's own targets (libddp, the internal libraries, the binaries and the tests)
# with GCC's or Clang's sanitizers. A comma-separated list handed to -fsanitize=, e.g.
#   -DDDP_SANITIZE=address,undefined     ASan + UBSan (scripts/sanitize.sh asan, CI)
#   -DDDP_SANITIZE=thread                TSan (scripts/sanitize.sh tsan)
# Third-party libraries (LibTorch, Gloo, GoogleTest from Debian) stay uninstrumented; see
# docs/TESTING.md for what that means for each sanitizer. Use a separate build folder per setting
# (build-asan, build-tsan): the flags change every object file.
set(DDP_SANITIZE "" CACHE STRING "Sanitizers for ddp's own targets: address,undefined | thread | empty (none)")

if(DDP_SANITIZE)
  string(REPLACE "," ";" ddp_sanitizers "${DDP_SANITIZE}")
  foreach(s IN LISTS ddp_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "ddp: DDP_SANITIZE: unknown sanitizer '${s}' (known: address, undefined, thread, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST ddp_sanitizers AND ("address" IN_LIST ddp_sanitizers OR "leak" IN_LIST ddp_sanitizers))
    message(FATAL_ERROR "ddp: DDP_SANITIZE: 'thread' cannot be combined with 'address' or 'leak'")
  endif()
  # Whole stacks with file:line in the reports. -O0 -g1 (line tables only): a file that includes
  # <torch/torch.h> compiles about twice as fast as at -O1 -g, which matters more on a 2-core CI
  # machine than the tests' speed; the reports point at the exact source line.
  add_compile_options(-fsanitize=${DDP_SANITIZE} -fno-omit-frame-pointer -O0 -g1)
  add_link_options(-fsanitize=${DDP_SANITIZE})
  if("undefined" IN_LIST ddp_sanitizers)
    # A UBSan finding ends the process (non-zero exit), so a test cannot pass over one.
    # vptr checks need RTTI of every class they meet; LibTorch's classes come from an
    # uninstrumented library built with hidden visibility, which gives false "wrong dynamic type"
    # reports on its tensors, so they are off.
    add_compile_options(-fno-sanitize-recover=all -fno-sanitize=vptr)
  endif()
  message(STATUS "ddp: sanitizers ${DDP_SANITIZE}")
endif()
